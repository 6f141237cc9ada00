package rest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/genchoice"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/middleware"
)

// The OpenAPI 3.1 document is built from the same route table the router
// serves, so the two cannot drift; a test walks both and validates real
// traffic against the document.

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func nullable(schema obj) obj { return obj{"oneOf": []any{schema, obj{"type": "null"}}} }

var (
	str       = obj{"type": "string"}
	boolean   = obj{"type": "boolean"}
	number    = obj{"type": "number"}
	uuidStr   = obj{"type": "string", "format": "uuid"}
	timestamp = obj{"type": "string", "format": "date-time", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`,
		"description": "UTC with milliseconds"}
	timeInput = obj{"type": "string", "description": "RFC 3339 (any offset, optional fraction) or YYYY-MM-DD"}
)

func object(required []string, props obj) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func keys(o obj) []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	return out
}

// described is schema o with a description.
func described(o obj, text string) obj {
	o["description"] = text
	return o
}

func enum[T ~string](values ...T) obj {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	return obj{"type": "string", "enum": names}
}

// The enumerations, from the ent schema and the core that validate them.
var (
	priorities     = enum(procedure.PriorityValues()...)
	states         = enum(procedure.StateValues()...)
	roles          = enum(member.RoleValues()...)
	sortDirections = enum("asc", "desc")
)

func schemas() obj {
	procedureProps := obj{
		"id": uuidStr, "shortId": nullable(str), "name": str,
		"priority": priorities, "state": states,
		"content": nullable(str), "categoryId": nullable(uuidStr), "doerId": nullable(uuidStr), "creatorId": uuidStr,
		"position": number, "dueAt": timestamp, "createdAt": timestamp, "updatedAt": timestamp,
		"projectId": uuidStr, "workspaceId": uuidStr, "captureId": nullable(str),
		"displayVideo": boolean, "isFineTunedData": boolean,
		"category": nullable(object([]string{"id", "name"}, obj{"id": uuidStr, "name": str})),
		"doer":     nullable(object([]string{"id", "name", "email"}, obj{"id": uuidStr, "name": str, "email": str})),
		"project":  nullable(object([]string{"id", "name"}, obj{"id": uuidStr, "name": str})),
		"comments": embeddedComments(),
		"commentCount": described(obj{"type": "integer", "minimum": 0},
			"how many comments the procedure holds: comments shows the newest "+itoa(limits.EmbeddedComments)+
				" of them, GET /procedures/{id}/comments every one"),
	}
	projectProps := obj{"id": uuidStr, "name": str, "workspaceId": uuidStr, "startedAt": nullable(timestamp),
		"dueAt": nullable(timestamp), "createdAt": timestamp, "updatedAt": timestamp}
	categoryProps := obj{"id": uuidStr, "name": str, "workspaceId": uuidStr, "createdAt": timestamp, "updatedAt": timestamp}
	memberProps := obj{"id": uuidStr, "name": str, "email": str, "role": roles,
		"workspaceId": uuidStr, "createdAt": timestamp}
	embeddedCommentProps := obj{"id": uuidStr, "text": str, "createdAt": timestamp}
	commentProps := obj{"id": uuidStr, "procedureId": uuidStr, "authorId": uuidStr, "text": str, "createdAt": timestamp, "updatedAt": timestamp}
	list := func(item string) obj {
		return object([]string{"data", "meta"}, obj{
			"data": obj{"type": "array", "items": ref(item)},
			"meta": object([]string{"total"}, obj{"total": obj{"type": "integer", "minimum": 0}}),
		})
	}
	anyRO := obj{"description": "read-only; accepted and ignored so that GET-modify-PUT round trips work"}
	readOnly := func(props obj, names ...string) obj {
		for _, n := range names {
			props[n] = anyRO
		}
		return props
	}
	codes := []string{"validation_failed", "bad_request", "disconnected", "unauthenticated", "forbidden", "not_found",
		"method_not_allowed", "conflict", "precondition_failed", "payload_too_large", "unsupported_media_type",
		"rate_limited", "internal", "generation_failed", "unavailable"}
	return obj{
		"Procedure":       object(keys(procedureProps), procedureProps),
		"Project":         object(keys(projectProps), projectProps),
		"Category":        object(keys(categoryProps), categoryProps),
		"Member":          object(keys(memberProps), memberProps),
		"Comment":         object(keys(commentProps), commentProps),
		"EmbeddedComment": object(keys(embeddedCommentProps), embeddedCommentProps),
		"ProcedureList":   list("Procedure"),
		"ProjectList":     list("Project"),
		"CategoryList":    list("Category"),
		"MemberList":      list("Member"),
		"CommentList":     list("EmbeddedComment"),
		"Deleted":         object([]string{"success"}, obj{"success": obj{"type": "boolean", "const": true}}),
		"Error": object([]string{"code", "message", "requestId"}, obj{
			"code": enum(codes...), "message": str, "requestId": uuidStr,
			"fields": obj{"type": "array", "items": object([]string{"field", "message"}, obj{"field": str, "message": str})},
			"reason": described(enum(apperr.Reasons...),
				"disconnected only: why the token no longer authenticates (the message is the interface's, the same for every cause)"),
		}),
		"CreateProcedure": object([]string{"name", "priority", "state", "dueAt", "categoryId", "doerId", "projectId"}, readOnly(obj{
			"name": str, "priority": priorities, "state": states,
			"dueAt": timeInput, "categoryId": str, "doerId": str, "projectId": str,
			"content":           obj{"description": "a string, any JSON value (stored as its JSON text), or null"},
			"generateProcedure": boolean,
			"contentType":       enum(genchoice.ContentTypes...),
			"docStyle":          enum(genchoice.DocStyles...),
			"language":          enum(genchoice.Languages...),
			"captureId":         nullable(str), "displayVideo": boolean, "isFineTunedData": boolean,
		}, "position", "workspaceId")),
		"UpdateProcedure": object(nil, readOnly(obj{
			"name": str, "priority": priorities, "state": states,
			"content": nullable(str), "categoryId": nullable(str), "doerId": nullable(str), "projectId": str,
			"dueAt": timeInput, "position": number, "captureId": nullable(str), "displayVideo": boolean, "isFineTunedData": boolean,
		}, "id", "shortId", "creatorId", "createdAt", "updatedAt", "workspaceId", "category", "doer", "project", "comments", "commentCount")),
		"CreateProject":  object([]string{"name"}, obj{"name": str, "startedAt": nullable(timeInput), "dueAt": nullable(timeInput)}),
		"UpdateProject":  object(nil, readOnly(obj{"name": str, "startedAt": nullable(timeInput), "dueAt": nullable(timeInput)}, "id", "workspaceId", "createdAt", "updatedAt")),
		"CreateCategory": object([]string{"name"}, obj{"name": str}),
		"UpdateCategory": object(nil, readOnly(obj{"name": str}, "id", "workspaceId", "createdAt", "updatedAt")),
		"AddComment":     object([]string{"text"}, obj{"text": str}),
		"Event":          eventSchema(),
		"EventList": object([]string{"data", "meta"}, obj{
			"data": obj{"type": "array", "items": ref("Event")},
			"meta": object([]string{"total", "nextCursor"}, obj{
				"total": obj{"type": "integer", "minimum": 0},
				"nextCursor": described(nullable(str),
					"the cursor parameter of the next page (null on the last): pages by cursor neither repeat nor skip an event while events are appended"),
			}),
		}),
	}
}

// eventSchema is core.Event's shape (docs/api.md, "Events").
func eventSchema() obj {
	var types []string
	for _, k := range core.EventKinds {
		if t := k.EntityType(); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	anyJSON := func(when string) obj {
		var types []any
		for _, t := range []string{"string", "number", "boolean", "object", "null"} {
			types = append(types, obj{"type": t})
		}
		return obj{"oneOf": types, "description": "the field's value " + when + " the write, as the API shows it (null: unset, or no record); " +
			"a procedure's content and a comment's text as {size, sha256}, never as themselves"}
	}
	change := object([]string{"field", "before", "after"}, obj{"field": str, "before": anyJSON("before"), "after": anyJSON("after")})
	props := obj{
		"id": uuidStr, "type": enum(core.EventKinds...), "workspaceId": uuidStr,
		"version":     described(obj{"type": "integer", "minimum": 1}, "the workspace version the write committed: increasing, not dense"),
		"createdAt":   timestamp,
		"entity":      object([]string{"type", "id"}, obj{"type": enum(types...), "id": uuidStr}),
		"procedureId": described(nullable(uuidStr), "the procedure written or commented on"),
		"projectId":   described(nullable(uuidStr), "the project written, or the procedure's; null for a comment's edit or delete"),
		"actor": described(object([]string{"memberId", "tokenId"}, obj{"memberId": nullable(uuidStr), "tokenId": nullable(uuidStr)}),
			"who wrote: a member and the token they used (both null for the operator's commands)"),
		"changes": described(obj{"type": "array", "maxItems": core.MaxFieldChanges, "items": change},
			"the fields the write changed (none for deleting a project or a category)"),
	}
	return object(keys(props), props)
}

// embeddedComments is a procedure's comments property: its newest
// limits.EmbeddedComments, so that a procedure's answer stays bounded, and
// where the rest are.
func embeddedComments() obj {
	n := itoa(limits.EmbeddedComments)
	o := nullable(obj{"type": "array", "maxItems": limits.EmbeddedComments, "items": ref("EmbeddedComment")})
	o["description"] = "the procedure's newest " + n + " comments (all of them when it has at most " + n + "), oldest first; " +
		"commentCount counts every one of them, and GET /procedures/{id}/comments pages through them"
	return o
}

func errorResponse(desc string) obj {
	return obj{"description": desc, "content": obj{"application/json": obj{"schema": ref("Error")}}}
}

func okResponse(schema string) obj {
	headers := rateLimitHeaders()
	headers["X-Request-Id"] = obj{"schema": uuidStr}
	return obj{"description": "OK", "content": obj{"application/json": obj{"schema": ref(schema)}},
		"headers": headers}
}

// rateLimitHeaders are on every authenticated response while the per-token
// rate limit is on (docs/api.md, Rate limits).
func rateLimitHeaders() obj {
	n := obj{"type": "integer", "minimum": 0}
	return obj{
		"RateLimit-Limit":     obj{"schema": n, "description": "the size of the token's bucket (--rate-burst, default 200): the most it may spend at once"},
		"RateLimit-Remaining": obj{"schema": n, "description": "whole tokens left in the bucket after this request"},
		"RateLimit-Reset":     obj{"schema": n, "description": "seconds until the bucket is full again"},
		"RateLimit-Policy": obj{"schema": obj{"type": "string", "pattern": `^[0-9]+;w=[1-9][0-9]*$`},
			"description": "<size>;w=<seconds>: the bucket's size and the seconds, rounded up, an empty bucket takes to refill " +
				"(200;w=4 by default: 200 at once, refilled at 50 a second)"},
	}
}

func query(name, desc string, schema obj) obj {
	return obj{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
}

// wholeNumber is the schema of a whole-number query parameter read by
// params.integer with these bounds and default. The server takes decimal
// digits only (no sign, no fraction, no exponent).
func wholeNumber(def, min, max int) obj {
	return obj{"type": "integer", "minimum": min, "maximum": max, "default": def}
}

// pages are the parameters of a page by number, as page() reads them: page
// and its size.
func pages(def, max int) []any {
	size := wholeNumber(def, 1, max)
	return []any{
		query("page", "1-based page number, in decimal digits", wholeNumber(1, 1, maxPageNumber)),
		query("limit", "page size, in decimal digits", size), query("pageSize", "alias of limit", size), query("perPage", "alias of limit", size),
	}
}

// pageParams are the parameters of a list searched by name, paged.
func pageParams(def, max int) []any {
	return append(pages(def, max), query("search", "case-insensitive substring", str), query("q", "alias of search", str))
}

type operation struct {
	summary  string
	params   []any
	body     string
	response string
	errors   []string
	// etag: the 200 response carries the record's ETag.
	etag bool
}

var ifMatch = obj{"name": "If-Match", "in": "header", "required": false, "schema": str,
	"description": "the ETag of the record as last read; if it changed since, the write is refused with 412 precondition_failed and nothing changes"}

// workspaceVersion and minVersion are docs/api.md's "Reading your writes":
// a write's answer carries the version it committed; a read may ask for it.
var (
	workspaceVersion = obj{"schema": obj{"type": "integer", "minimum": 1},
		"description": "the workspace version this write committed: send it as X-Min-Version on a read to be sure to see the write (set when the request wrote)"}
	minVersion = obj{"name": middleware.MinVersionHeader, "in": "header", "required": false,
		"schema":      obj{"type": "integer", "minimum": 0},
		"description": "answer as of this workspace version or a later one (an X-Workspace-Version a write answered); with standbys serving reads, a standby that has not replayed it does not answer; a value that is not a whole number is refused 400 bad_request"}
)

// idempotencyKey is docs/api.md's Idempotency-Key, on every write.
var idempotencyKey = obj{"name": "Idempotency-Key", "in": "header", "required": false,
	"schema": obj{"type": "string", "pattern": "^[ -~]{1,255}$"},
	"description": "makes the write safe to retry: sent again with the same request (member, method, path, query and body) within 24 hours, " +
		"the write runs once and the first answer (2xx or 4xx; a 5xx or 429 leaves the key free) is replayed byte for byte with Idempotent-Replayed: true; " +
		"the key with another request is 409 conflict, and 409 conflict with Retry-After while the first request still runs"}

// keyed documents Idempotency-Key on a write's operation o: the header, the
// marker of a replayed answer, and its 409s.
func keyed(o, responses obj) {
	params, _ := o["parameters"].([]any)
	o["parameters"] = append(append([]any{}, params...), idempotencyKey)
	replayed := obj{"schema": obj{"type": "string", "enum": []any{"true"}},
		"description": "set on an answer replayed for a retry with the same Idempotency-Key"}
	responses["409"] = errorResponse("conflict: the write breaks a rule, or its Idempotency-Key was used for a different request or is still in progress (then with Retry-After)")
	for code, r := range responses {
		if code == "429" || code >= "5" {
			continue
		}
		resp := r.(obj)
		headers, _ := resp["headers"].(obj)
		if headers == nil {
			headers = obj{}
			resp["headers"] = headers
		}
		headers["Idempotent-Replayed"] = replayed
	}
}

func operations() map[string]operation {
	procedureList := append(pageParams(core.DefaultProcedurePageSize, core.MaxProcedurePageSize),
		query("sortBy", "sort field, default "+string(core.DefaultProcedureOrder.Field), enum(core.ProcedureSorts...)),
		query("sortOrder", "default desc", sortDirections), query("order", "alias of sortOrder", sortDirections),
		query("categoryId", "", str), query("doerId", "", str), query("projectId", "", str),
		query("state", "", states),
		query("priority", "", priorities),
		query("startedAt", "dueAt on or after (timestamp)", timeInput),
		query("dueAt", "dueAt on or before (timestamp)", timeInput),
	)
	cursor := query("cursor", "start after this cursor (meta.nextCursor of the page before) instead of at a page number", str)
	historyParams := append(pages(core.DefaultHistoryPageSize, core.MaxHistoryPageSize), cursor)
	// Each value is a kind, or kinds separated by commas.
	var alternatives []string
	for _, k := range core.EventKinds {
		alternatives = append(alternatives, strings.ReplaceAll(string(k), ".", `\.`))
	}
	kind := "(" + strings.Join(alternatives, "|") + ")"
	kinds := obj{"type": "array", "items": obj{"type": "string", "pattern": "^" + kind + "(," + kind + ")*$"}}
	eventParams := append(pages(core.DefaultEventPageSize, core.MaxEventPageSize), cursor,
		query("order", "by version: desc (newest first, the default) or asc (a feed read after a version)", sortDirections),
		query("sortOrder", "alias of order", sortDirections),
		query("after", "only events of versions above this one; one older than the retention is refused (400 validation_failed naming after): reload, then read from the version the message names",
			obj{"type": "integer", "minimum": 0}),
		obj{"name": "kind", "in": "query", "required": false, "style": "form", "explode": true, "schema": kinds,
			"description": "events of any of these kinds (" + strings.Join(names(core.EventKinds), ", ") + "), at most " + itoa(core.MaxFilterValues) +
				"; repeat the parameter (kind=a&kind=b) or separate them by commas (kind=a,b)"},
		query("entityId", "events of one record, of any type", str),
		query("procedureId", "events of a procedure and its comments, also once deleted", str),
		query("projectId", "events naming a project (a comment's edit or delete names none)", str),
		query("actorId", "events written by a member", str),
	)
	read := []string{"400", "401", "404"}
	write := []string{"400", "401", "403", "404", "409", "413", "415"}
	return map[string]operation{
		"GET /procedures":                {"List procedures", procedureList, "", "ProcedureList", []string{"400", "401", "413"}, false},
		"POST /procedures":               {"Create a procedure", nil, "CreateProcedure", "Procedure", append(write, "502"), true},
		"GET /procedures/{id}":           {"Get a procedure by id or shortId", nil, "", "Procedure", read, true},
		"PUT /procedures/{id}":           {"Update a procedure (only the fields sent)", []any{ifMatch}, "UpdateProcedure", "Procedure", append(write, "412"), true},
		"DELETE /procedures/{id}":        {"Delete a procedure and its comments", []any{ifMatch}, "", "Deleted", []string{"400", "401", "403", "404", "412"}, false},
		"GET /procedures/{id}/comments":  {"List a procedure's comments, oldest first", pages(core.DefaultCommentPageSize, core.MaxCommentPageSize), "", "CommentList", read, false},
		"POST /procedures/{id}/comments": {"Comment on a procedure", nil, "AddComment", "Comment", write, false},
		"GET /projects":                  {"List projects", pageParams(core.DefaultListPageSize, core.MaxListPageSize), "", "ProjectList", []string{"400", "401"}, false},
		"POST /projects":                 {"Create a project", nil, "CreateProject", "Project", write, true},
		"GET /projects/{id}":             {"Get a project", nil, "", "Project", read, true},
		"PUT /projects/{id}":             {"Update a project", []any{ifMatch}, "UpdateProject", "Project", append(write, "412"), true},
		"DELETE /projects/{id}":          {"Delete an empty project", []any{ifMatch}, "", "Deleted", []string{"400", "401", "403", "404", "409", "412"}, false},
		"GET /categories":                {"List categories", pageParams(core.DefaultListPageSize, core.MaxListPageSize), "", "CategoryList", []string{"400", "401"}, false},
		"POST /categories":               {"Create a category", nil, "CreateCategory", "Category", write, true},
		"GET /categories/{id}":           {"Get a category", nil, "", "Category", read, true},
		"PUT /categories/{id}":           {"Rename a category", []any{ifMatch}, "UpdateCategory", "Category", append(write, "412"), true},
		"DELETE /categories/{id}":        {"Delete a category; its procedures become uncategorised", []any{ifMatch}, "", "Deleted", []string{"400", "401", "403", "404", "412"}, false},
		"GET /members":                   {"List members", pageParams(core.DefaultListPageSize, core.MaxListPageSize), "", "MemberList", []string{"400", "401"}, false},
		"GET /members/{id}":              {"Get a member", nil, "", "Member", read, false},
		"GET /procedures/{id}/history":   {"A procedure's history (its events and its comments'), newest first", historyParams, "", "EventList", read, false},
		"GET /events":                    {"The workspace's events", eventParams, "", "EventList", []string{"400", "401"}, false},
	}
}

// descriptions say more of an operation than its summary.
var descriptions = map[string]string{
	"GET /procedures/{id}/history": "Every event of the procedure (id or shortId; a deleted procedure's by its id) and of its comments, " +
		"newest first, in pages by number or by cursor; meta.total counts them. Events are kept for the server's retention.",
	"GET /events": "The workspace's change log: every write's event, by version, newest first unless order=asc, narrowed by the filter " +
		"parameters (combined with AND), in pages by number or by cursor. A feed reads order=asc&after=<the last version seen>. " +
		"A role sees the events of the records it may read: token events only an ADMIN.",
	"GET /procedures/{id}/comments": "Every comment of the procedure (id or shortId), oldest first, in pages by number. " +
		"A procedure holds any number of comments; its own answer embeds only its newest " + itoa(limits.EmbeddedComments) +
		" (its comments property) and counts them all (commentCount); this list holds them all, and meta.total counts them.",
}

var errorDescriptions = map[string]string{
	"400": "validation_failed, bad_request or disconnected",
	"401": "unauthenticated",
	"403": "forbidden",
	"404": "not_found",
	"405": "method_not_allowed",
	"409": "conflict",
	"412": "precondition_failed",
	"413": "payload_too_large: a body over 1 MiB, or an answer that would pass the bound on a response (--max-response-mb)",
	"415": "unsupported_media_type",
	"429": "rate_limited: the token is over its rate limit, or the client address over its limit of failed authentications; nothing ran",
	"500": "internal",
	"502": "generation_failed",
	"503": "unavailable",
}

// successStatuses are the operations whose success is not 200 OK (their
// answer, or none for 204, is the operation's response).
var successStatuses = map[string]int{
	"POST /webhooks":                          http.StatusCreated,
	"DELETE /webhooks/{id}":                   http.StatusNoContent,
	"POST /webhook-deliveries/{id}/redeliver": http.StatusAccepted,
}

// Document returns the OpenAPI 3.1 document of the REST API.
func Document() map[string]any {
	paths := obj{}
	ops := operations()
	for k, op := range webhookOperations() {
		ops[k] = op
	}
	for _, rt := range routes {
		op, ok := ops[rt.Method+" "+rt.Path]
		if !ok {
			panic("rest: no OpenAPI operation for " + rt.Method + " " + rt.Path)
		}
		item, _ := paths[rt.Path].(obj)
		if item == nil {
			item = obj{}
			if strings.Contains(rt.Path, "{id}") {
				item["parameters"] = []any{obj{"name": "id", "in": "path", "required": true, "schema": str,
					"description": "record id (procedures also accept a shortId such as PRC-12)"}}
			}
			paths[rt.Path] = item
		}
		okResp := okResponse(op.response)
		if op.etag {
			okResp["headers"].(obj)["ETag"] = obj{"schema": str, "description": "send it back as If-Match to write only if the record is unchanged"}
		}
		success := http.StatusOK
		if status, ok := successStatuses[rt.Method+" "+rt.Path]; ok {
			success = status
		}
		if op.response == "" {
			delete(okResp, "content")
		}
		okResp["description"] = http.StatusText(success)
		responses := obj{itoa(success): okResp}
		for _, code := range append(op.errors, "405", "429", "500", "503") {
			responses[code] = errorResponse(errorDescriptions[code])
		}
		limited := rateLimitHeaders()
		limited["Retry-After"] = obj{"schema": obj{"type": "integer", "minimum": 1}, "description": "seconds until the bucket holds what the request costs (the token's, or the client address's bucket of failures)"}
		responses["429"].(obj)["headers"] = limited
		o := obj{
			"operationId": strings.ToLower(rt.Method) + strings.NewReplacer("/", "_", "{", "", "}", "").Replace(rt.Path),
			"summary":     op.summary,
			"responses":   responses,
		}
		if d := descriptions[rt.Method+" "+rt.Path]; d != "" {
			o["description"] = d
		}
		if len(op.params) > 0 {
			o["parameters"] = op.params
		}
		if op.body != "" {
			o["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref(op.body)}}}
		}
		if rt.Method != http.MethodGet {
			keyed(o, responses)
			okResp["headers"].(obj)[middleware.VersionHeader] = workspaceVersion
		} else {
			params, _ := o["parameters"].([]any)
			o["parameters"] = append(append([]any{}, params...), minVersion)
		}
		item[strings.ToLower(rt.Method)] = o
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{"title": "procsvc REST API", "version": "1.0.0",
			"description": "Procedures, projects, categories and members of the token's workspace. Every error answers the Error body."},
		"servers":    []any{obj{"url": "/"}},
		"security":   []any{obj{"bearer": []any{}}},
		"paths":      paths,
		"components": obj{"schemas": allSchemas(), "securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer"}}},
	}
}

var (
	docOnce  sync.Once
	docBytes []byte
)

// DocumentJSON returns the document, rendered once.
func DocumentJSON() []byte {
	docOnce.Do(func() {
		b, err := json.MarshalIndent(Document(), "", "  ")
		if err != nil {
			panic(err)
		}
		docBytes = b
	})
	return docBytes
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(DocumentJSON())
}
