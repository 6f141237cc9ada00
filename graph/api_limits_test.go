package graph_test

// Hostile GraphQL documents (fragment fan-out, repetition, aliasing, sheer
// size) are refused with a 400 before gqlgen validates them and before any
// resolver runs, in about the time of an ordinary small query; ordinary
// documents, the playground's introspection among them, still run. The
// limits are listed in docs/api.md.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// fanOut is a chain of depth fragments, each spreading the next twice, so
// that the operation expands to 2^depth fields.
func fanOut(depth int) string {
	var b strings.Builder
	b.WriteString("{ viewer { ...F0 } }")
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, " fragment F%d on Member { ...F%d ...F%d }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment F%d on Member { id }", depth)
	return b.String()
}

// repeatedFields selects viewer's id n times.
func repeatedFields(n int) string {
	return "{ viewer { " + strings.Repeat("id ", n) + "} }"
}

// typenames selects __typename n times at the root.
func typenames(n int) string {
	return "{ " + strings.Repeat("__typename ", n) + "}"
}

// inlineFragments selects viewer's id through n inline fragments, each
// under its own alias.
func inlineFragments(n int) string {
	var b strings.Builder
	b.WriteString("{ viewer {")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " ... on Member { i%d: id }", i)
	}
	b.WriteString(" } }")
	return b.String()
}

// aliasedViewers selects viewer under n aliases.
func aliasedViewers(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " v%d: viewer { id }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// spreadFragments spreads n distinct fragments on viewer, each selecting id
// under its own alias.
func spreadFragments(n int) string {
	var b strings.Builder
	b.WriteString("{ viewer {")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " ...S%d", i)
	}
	b.WriteString(" } }")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " fragment S%d on Member { s%d: id }", i, i)
	}
	return b.String()
}

// chainedFragments is a chain of n fragments, each spreading the next once,
// the last selecting fields fields: small for the operation, but
// validation walks every fragment definition with the chain below it.
func chainedFragments(n, fields int) string {
	names := []string{"id", "name", "email", "role", "createdAt"}
	var b strings.Builder
	b.WriteString("{ viewer { ...C0 } }")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " fragment C%d on Member { ...C%d }", i, i+1)
	}
	fmt.Fprintf(&b, " fragment C%d on Member {", n)
	for i := 0; i < fields; i++ {
		fmt.Fprintf(&b, " %s", names[i%len(names)])
	}
	b.WriteString(" }")
	return b.String()
}

// operationsSharing is n named operations spreading one fragment of fields
// fields: each operation is small, the document is not.
func operationsSharing(n, fields int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "query Q%d { viewer { ...Shared } } ", i)
	}
	b.WriteString("fragment Shared on Member {")
	for i := 0; i < fields; i++ {
		fmt.Fprintf(&b, " f%d: id", i)
	}
	b.WriteString(" }")
	return b.String()
}

// mutationAliases creates n categories in one mutation, one per alias,
// each named prefix plus its number.
func mutationAliases(n int, prefix string) string {
	var b strings.Builder
	b.WriteString("mutation {")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " c%d: createCategory(input: {name: %q}) { id }", i, fmt.Sprintf("%s %d", prefix, i))
	}
	b.WriteString(" }")
	return b.String()
}

// introspection is graphql-js's introspection query (getIntrospectionQuery,
// with descriptions) with its TypeRef fragment nesting ofType levels deep:
// graphql-js nests it nine; the playground cuts it to six (web/src/main.jsx).
func introspection(ofTypeLevels int) string {
	typeRef := "kind name"
	for i := 0; i < ofTypeLevels; i++ {
		typeRef = "kind name ofType { " + typeRef + " }"
	}
	return `query IntrospectionQuery {
  __schema {
    queryType { name kind }
    mutationType { name kind }
    subscriptionType { name kind }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) {
    name description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { ` + typeRef + ` }`
}

// limitReply is one answer of /graphql with the keys its body holds.
type limitReply struct {
	*apitest.GQLResponse
	keys    map[string]json.RawMessage
	elapsed time.Duration
}

// sendTimed posts body (or, for GET, the query string) and times the round trip.
func sendTimed(t testing.TB, s *apitest.Server, method, token, target string, body []byte) limitReply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	out := limitReply{GQLResponse: &apitest.GQLResponse{Status: resp.StatusCode, Header: resp.Header}, elapsed: elapsed}
	if err := json.Unmarshal(raw, out.GQLResponse); err != nil {
		t.Fatalf("response is not JSON (status %d): %.300s", resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &out.keys); err != nil {
		t.Fatalf("response is not a JSON object (status %d): %.300s", resp.StatusCode, raw)
	}
	return out
}

func postTimed(t testing.TB, s *apitest.Server, token, query string) limitReply {
	t.Helper()
	return postOperationTimed(t, s, token, query, "")
}

// postOperationTimed is postTimed naming the operation to run (none when
// operation is ""), for documents of several.
func postOperationTimed(t testing.TB, s *apitest.Server, token, query, operation string) limitReply {
	t.Helper()
	request := map[string]any{"query": query}
	if operation != "" {
		request["operationName"] = operation
	}
	body, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	return sendTimed(t, s, "POST", token, "/graphql", body)
}

// wantRefused asserts a request error: status 400, code, our extensions, no
// data key (GraphQL over HTTP: a request that is not executed has no data),
// and a message that names the limit.
func wantRefused(t testing.TB, r limitReply, code, mentions string) {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %+v", r.Status, r.Errors)
	}
	wantError(t, r.GQLResponse, code)
	if d, ok := r.keys["data"]; ok {
		t.Fatalf("a refused document has a data key: %s", d)
	}
	if !strings.Contains(r.Errors[0].Message, mentions) {
		t.Fatalf("message %q does not mention %q", r.Errors[0].Message, mentions)
	}
}

// The refusal of a hostile document may take at most refusalRatio times an
// ordinary query (a page of 20 procedures with their project, category and
// doer). Each refusal is timed right after an ordinary query, and the best
// ratio of up to refusalRuns such pairs counts: a pair shares the machine's
// load of the moment, so a busy machine (CI runs packages in parallel, under
// -race too) slows both sides alike. Before the limits these documents took
// from milliseconds to minutes; a refusal now costs about as much as
// reading, decoding and parsing the document, a few milliseconds at most for
// the largest documents allowed, about 5-10x an ordinary query.
const (
	refusalRatio = 40
	refusalRuns  = 8
	seededPage   = 20
)

// ordinaryQueryTime is the time of an ordinary query; run makes each
// document new, so that neither the query cache nor the response cache
// answers.
func ordinaryQueryTime(t testing.TB, s *apitest.Server, token string, run int) time.Duration {
	t.Helper()
	r := postTimed(t, s, token, fmt.Sprintf(`{ v%d: viewer { id name }
		procedures(first: %d) { totalCount nodes { id shortId name state priority dueAt
			project { id name } category { id name } doer { id name } } } }`, run, seededPage))
	var out struct{ Procedures procPage }
	ok(t, r.GQLResponse, &out)
	if len(out.Procedures.Nodes) != seededPage {
		t.Fatalf("ordinary query: %d procedures", len(out.Procedures.Nodes))
	}
	return r.elapsed
}

func TestGraphQLHostileDocuments(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Hostile", "HOS")
		for i := 0; i < seededPage; i++ {
			createProc(t, s, w.MemberToken, procInput(w, fmt.Sprintf("Seeded %d", i), nil))
		}
		runs := 0 // makes every ordinary query a new document

		categories := func(t *testing.T) int {
			t.Helper()
			var out struct{ Categories struct{ TotalCount int } }
			ok(t, s.GraphQL(t, w.ViewToken, `{ categories(search: "hostile") { totalCount } }`, nil), &out)
			return out.Categories.TotalCount
		}

		// What each refusal's message says, by limit.
		const (
			fields     = "fields counting each fragment spread in full"
			repeats    = "times at"
			inlines    = "inline fragments counting"
			spreads    = "fragment spreads counting"
			aliases    = "aliased fields"
			rootFields = "root fields"
			selections = "selections"
			tokens     = "tokens"
		)
		over := func(limit int) int { return limit + 1 }
		cases := []struct {
			name     string
			query    string
			code     string
			mentions string
		}{
			{"FanOut10", fanOut(10), "validation_failed", fields},
			{"FanOut20", fanOut(20), "validation_failed", fields},
			{"FanOut28", fanOut(28), "validation_failed", fields},
			{"FanOut60", fanOut(60), "validation_failed", fields},
			{"RepeatedFieldsOverRepeats", repeatedFields(over(gqlhttp.MaxFieldRepeats)), "validation_failed", repeats},
			{"RepeatedFields1000", repeatedFields(1000), "validation_failed", fields},
			{"RepeatedFields14000", repeatedFields(14000), "validation_failed", fields},
			{"Typename100", typenames(100), "validation_failed", repeats},
			{"Typename1000", typenames(1000), "validation_failed", repeats},
			{"Typename14000", typenames(14000), "validation_failed", fields},
			{"InlineFragmentsOverLimit", inlineFragments(over(gqlhttp.MaxInlineFragments)), "validation_failed", inlines},
			{"InlineFragments1000", inlineFragments(1000), "validation_failed", fields},
			{"InlineFragments12000", inlineFragments(12000), "bad_request", tokens},
			{"AliasesOverLimit", aliasedViewers(over(gqlhttp.MaxAliases)), "validation_failed", aliases},
			{"Aliases1000", aliasedViewers(1000), "validation_failed", fields},
			{"SpreadsOverLimit", spreadFragments(over(gqlhttp.MaxFragmentSpreads)), "validation_failed", spreads},
			{"ChainedFragments", chainedFragments(40, 125), "validation_failed", selections},
			{"OperationsSharingAFragment", operationsSharing(50, 100), "validation_failed", selections},
			{"FragmentCycle", "{ viewer { ...A } } fragment A on Member { id ...B } fragment B on Member { ...A }", "validation_failed", "spreads itself"},
			{"DuplicateFragment", "{ viewer { ...F } } fragment F on Member { id } fragment F on Member { " + strings.Repeat("id ", 5000) + "}", "validation_failed", "only one fragment"},
			{"Tokens", repeatedFields(gqlhttp.MaxTokens), "bad_request", tokens},
			{"MutationAliasesOverLimit", mutationAliases(over(gqlhttp.MaxMutationRootFields), "hostile a"), "validation_failed", rootFields},
			{"MutationAliases100", mutationAliases(100, "hostile b"), "validation_failed", rootFields},
			{"MutationAliases900", mutationAliases(900, "hostile c"), "validation_failed", rootFields},
		}
		operationOf := map[string]string{"OperationsSharingAFragment": "Q0"}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cats := categories(t)
				defer func() {
					if after := categories(t); after != cats {
						t.Errorf("a refused mutation wrote: %d categories, then %d", cats, after)
					}
				}()
				bestRatio, best, normal := math.Inf(1), time.Duration(0), time.Duration(0)
				for i := 0; i < refusalRuns && bestRatio > refusalRatio; i++ {
					runs++
					base := ordinaryQueryTime(t, s, w.MemberToken, runs)
					before := db.Statements()
					// A document of several operations names the one
					// to run: the bound counts every operation's
					// selections all the same.
					r := postOperationTimed(t, s, w.MemberToken, tc.query, operationOf[tc.name])
					wantRefused(t, r, tc.code, tc.mentions)
					// Authentication runs at most two statements per
					// request (its lookup and the token's lastUsedAt);
					// nothing else may.
					if n := db.Statements() - before; n > 2 {
						t.Fatalf("the refusal ran %d statements", n)
					}
					if ratio := float64(r.elapsed) / float64(base); ratio < bestRatio {
						bestRatio, best, normal = ratio, r.elapsed, base
					}
				}
				t.Logf("%d bytes refused in %v (%.1f× an ordinary query, %v)", len(tc.query), best, bestRatio, normal)
				if bestRatio > refusalRatio {
					t.Fatalf("refusal took %v, more than %d× an ordinary query (%v)", best, refusalRatio, normal)
				}
			})
		}

		t.Run("GetRefused", func(t *testing.T) {
			r := sendTimed(t, s, "GET", w.AdminToken, "/graphql?query="+url.QueryEscape(fanOut(28)), nil)
			wantRefused(t, r, "validation_failed", fields)
		})
		t.Run("PersistedQueryRefusedAndNotStored", func(t *testing.T) {
			q := fanOut(28)
			sum := sha256.Sum256([]byte(q))
			ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
			body, _ := json.Marshal(map[string]any{"query": q, "extensions": ext})
			wantRefused(t, sendTimed(t, s, "POST", w.AdminToken, "/graphql", body), "validation_failed", fields)
			body, _ = json.Marshal(map[string]any{"extensions": ext})
			r := sendTimed(t, s, "POST", w.AdminToken, "/graphql", body)
			wantError(t, r.GQLResponse, "PERSISTED_QUERY_NOT_FOUND")
		})
		t.Run("UnusedFragmentRefused", func(t *testing.T) {
			r := postTimed(t, s, w.AdminToken, "{ viewer { id } } fragment Big on Member { "+strings.Repeat("id ", 5000)+"}")
			wantRefused(t, r, "validation_failed", "Big")
		})
		t.Run("SyntaxErrorHasNoData", func(t *testing.T) {
			wantRefused(t, postTimed(t, s, w.AdminToken, "{ viewer { id "), "bad_request", "")
		})
		t.Run("ValidationErrorHasNoData", func(t *testing.T) {
			wantRefused(t, postTimed(t, s, w.AdminToken, "{ viewer { password } }"), "validation_failed", "password")
		})
		t.Run("DepthRefusedWithoutData", func(t *testing.T) {
			wantRefused(t, postTimed(t, s, w.AdminToken, deepIntrospection(gqlhttp.MaxDepth+1)), "validation_failed", "deep")
		})
		t.Run("ComplexityRefusedWith400", func(t *testing.T) {
			wantRefused(t, postTimed(t, s, w.AdminToken, aliasedLists(gqlhttp.MaxComplexity/100+1)), "validation_failed", "complex")
		})

		// What ordinary clients send still runs.
		passing := []struct{ name, query string }{
			{"PlaygroundIntrospection", introspection(6)},
			{"StandardIntrospection", introspection(9)},
			// As graphql-js 16 prints it (introspection_queries_test.go).
			{"GraphQLJSIntrospection", graphqlJSIntrospection},
			{"GraphQLJSIntrospectionAllOptions", graphqlJSIntrospectionAllOptions},
			{"FreeTypeRefs", introspection(gqlhttp.MaxFreeWrappedTypes)},
			{"FullProceduresPage", fullPage},
			{"FieldRepeatsAtLimit", repeatedFields(gqlhttp.MaxFieldRepeats)},
			{"AliasesAtLimit", aliasedViewers(gqlhttp.MaxAliases)},
			{"InlineFragmentsAtLimit", inlineFragments(gqlhttp.MaxInlineFragments)},
			{"SpreadsAtLimit", spreadFragments(gqlhttp.MaxFragmentSpreads)},
			{"FanOut4", fanOut(4)},
			{"ChainedFragmentsShort", chainedFragments(5, 25)},
		}
		for _, tc := range passing {
			t.Run(tc.name, func(t *testing.T) {
				r := postTimed(t, s, w.AdminToken, tc.query)
				if r.Status != http.StatusOK || len(r.Errors) > 0 {
					t.Fatalf("status %d: %+v", r.Status, r.Errors)
				}
				if d := string(r.keys["data"]); d == "" || d == "null" {
					t.Fatalf("no data: %s", d)
				}
			})
		}
		t.Run("MutationRootFieldsAtLimit", func(t *testing.T) {
			before := categories(t)
			r := postTimed(t, s, w.AdminToken, mutationAliases(gqlhttp.MaxMutationRootFields, "hostile ok"))
			if r.Status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("status %d: %+v", r.Status, r.Errors)
			}
			if after := categories(t); after != before+gqlhttp.MaxMutationRootFields {
				t.Fatalf("%d categories, then %d", before, after)
			}
		})
	})
}

// TestCheckDocumentStopsWithItsRequest: the document walk gives up once the
// request's context has ended (the client left, or the deadline passed).
func TestCheckDocumentStopsWithItsRequest(t *testing.T) {
	// Within every limit, and a few hundred selections to walk.
	q := spreadFragments(gqlhttp.MaxFragmentSpreads)
	if err := gqlhttp.CheckDocument(context.Background(), q); err != nil {
		t.Fatalf("live request: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := gqlhttp.CheckDocument(ctx, q)
	if err == nil || apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("ended request: %v", err)
	}
}

// TestSubscriptionSelectsOneRootField: a subscription selects exactly one
// root field, counting aliases, fragments and inline fragments; anything
// else is refused before it runs (gqlgen's executor would answer it with no
// stream at all: a 500 over Server-Sent Events), over Server-Sent Events
// with 400 validation_failed and no stream, over a WebSocket with an error
// for the subscription.
func TestSubscriptionSelectsOneRootField(t *testing.T) {
	s := apitest.Start(t, dbtest.Open(t, "sqlite"))
	w := s.NewWorkspace(t, "Subs", "SUBS")
	refused := []string{
		`subscription { a: procedureEvents { kind } b: procedureEvents { kind } }`,
		`subscription { procedureEvents { kind } b: procedureEvents { kind } }`,
		`subscription { procedureEvents { kind } ... on Subscription { b: procedureEvents { kind } } }`,
		`subscription { ...E b: procedureEvents { kind } } fragment E on Subscription { procedureEvents { kind } }`,
		`subscription { procedureEvents { kind } __typename }`,
	}
	sse := bearer(w.ViewToken)
	sse.Set("Accept", "text/event-stream")
	for _, q := range refused {
		body, _ := json.Marshal(map[string]any{"query": q})
		r := rawGraphQL(t, s, "POST", "/graphql", sse, "application/json", body)
		wantError(t, r, "validation_failed")
		if r.Status != http.StatusBadRequest || len(r.Data) != 0 || !strings.Contains(r.Errors[0].Message, "exactly one") {
			t.Fatalf("over SSE, %s: status %d, data %s: %+v", q, r.Status, r.Data, r.Errors)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	type msg struct {
		ID      string          `json:"id,omitempty"`
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload,omitempty"`
	}
	send := func(m msg) {
		t.Helper()
		if err := wsjson.Write(ctx, c, m); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() msg {
		t.Helper()
		for {
			var m msg
			if err := wsjson.Read(ctx, c, &m); err != nil {
				t.Fatal(err)
			}
			if m.Type != "ping" {
				return m
			}
			send(msg{Type: "pong"})
		}
	}
	auth, _ := json.Marshal(map[string]string{"authorization": "Bearer " + w.ViewToken})
	send(msg{Type: "connection_init", Payload: auth})
	if m := recv(); m.Type != "connection_ack" {
		t.Fatalf("got %s %s", m.Type, m.Payload)
	}
	for i, q := range refused {
		id := strconv.Itoa(i)
		payload, _ := json.Marshal(map[string]any{"query": q})
		send(msg{ID: id, Type: "subscribe", Payload: payload})
		m := recv()
		for m.Type == "complete" && m.ID != id { // the end of the one before
			m = recv()
		}
		var errs []apitest.GQLError
		_ = json.Unmarshal(m.Payload, &errs)
		if m.Type != "error" || m.ID != id || len(errs) != 1 || errs[0].Extensions.Code != "validation_failed" {
			t.Fatalf("over a WebSocket, %s: %s %s %s", q, m.Type, m.ID, m.Payload)
		}
	}
	// One root field, under an alias or through fragments, passes.
	for _, q := range []string{
		`subscription { e: procedureEvents { kind } }`,
		`subscription { ...E } fragment E on Subscription { e: procedureEvents { kind } }`,
		`subscription { procedureEvents { kind } ... on Subscription { procedureEvents { procedureId } } }`,
	} {
		if err := gqlhttp.CheckDocument(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
