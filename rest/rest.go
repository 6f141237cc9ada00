// Package rest serves docs/contract.md's REST endpoints for legacy clients.
// It is an adapter only: each handler decodes the request, calls the same
// GraphQL resolver methods the /graphql endpoint runs, and encodes the
// contract's shapes. No business rule lives here.
package rest

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/respcache"
)

// API is the REST face over the GraphQL resolvers.
type API struct {
	r   *graph.Resolver
	log *slog.Logger
}

// New returns the REST API over r.
func New(r *graph.Resolver, log *slog.Logger) *API { return &API{r: r, log: log} }

// route is one method and path pattern served.
type route struct {
	Method, Path string
	handle       func(a *API, w http.ResponseWriter, r *http.Request) error
}

// routes is every endpoint. The OpenAPI document lists exactly these (a test
// holds the two together).
var routes = []route{
	{"GET", "/procedures", (*API).listProcedures},
	{"POST", "/procedures", (*API).createProcedure},
	{"GET", "/procedures/{id}", (*API).getProcedure},
	{"PUT", "/procedures/{id}", (*API).updateProcedure},
	{"DELETE", "/procedures/{id}", (*API).deleteProcedure},
	{"POST", "/procedures/{id}/comments", (*API).addComment},
	{"GET", "/projects", (*API).listProjects},
	{"POST", "/projects", (*API).createProject},
	{"GET", "/projects/{id}", (*API).getProject},
	{"PUT", "/projects/{id}", (*API).updateProject},
	{"DELETE", "/projects/{id}", (*API).deleteProject},
	{"GET", "/categories", (*API).listCategories},
	{"POST", "/categories", (*API).createCategory},
	{"GET", "/categories/{id}", (*API).getCategory},
	{"PUT", "/categories/{id}", (*API).updateCategory},
	{"DELETE", "/categories/{id}", (*API).deleteCategory},
	{"GET", "/members", (*API).listMembers},
	{"GET", "/members/{id}", (*API).getMember},
}

// Routes returns "METHOD /path" for every endpoint served.
func Routes() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.Method + " " + rt.Path
	}
	return out
}

// footprinted are the GET routes that show procedures read through the
// core and their edges, nothing else: a cached answer stays valid through
// writes that leave it alone (internal/respcache).
var footprinted = map[string]bool{"/procedures": true, "/procedures/{id}": true}

// Register adds every endpoint to mux behind authenticate, plus a 405 answer
// (with Allow) for other methods on known paths.
func (a *API) Register(mux *http.ServeMux, authenticate func(http.Handler) http.Handler) {
	allowed := map[string][]string{}
	for _, rt := range routes {
		rt := rt
		allowed[rt.Path] = append(allowed[rt.Path], rt.Method)
		mux.Handle(rt.Method+" "+rt.Path, authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := checkQuery(r.URL.RawQuery); err != nil {
				a.fail(w, r, err)
				return
			}
			if rt.Method == http.MethodGet {
				// No GET writes: its edges may come from what other
				// reads of the workspace's version loaded.
				loader.ReadOnly(r.Context())
				respcache.MarkCacheable(r.Context(), rt.Path)
				if footprinted[rt.Path] {
					respcache.MarkFootprinted(r.Context())
				}
			}
			if err := rt.handle(a, w, r); err != nil {
				a.fail(w, r, err)
			}
		})))
	}
	for path, methods := range allowed {
		sort.Strings(methods)
		allow := strings.Join(methods, ", ")
		if contains(methods, "GET") {
			allow += ", HEAD"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			a.fail(w, r, apperr.New(apperr.MethodNotAllowed, "%s is not allowed on %s; allowed: %s", r.Method, path, allow))
		})
	}
	mux.Handle("GET /openapi.json", http.HandlerFunc(serveOpenAPI))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// fail answers err with docs/design.md §6's body.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	middleware.WriteError(w, r, a.log, err)
}

// ok answers v with 200.
func ok(w http.ResponseWriter, v any) error { return middleware.WriteJSON(w, http.StatusOK, v) }

// appendProcedure appends p with its edges to b, read through the request's
// dataloaders (primed by the resolver that returned p).
func (a *API) appendProcedure(ctx context.Context, b []byte, p *ent.Procedure) ([]byte, error) {
	return appendProcedureVia(ctx, a.r.Procedure(), b, p)
}

// procedureEdges are the GraphQL resolvers of a procedure's edges.
type procedureEdges interface {
	Category(context.Context, *ent.Procedure) (*ent.Category, error)
	Doer(context.Context, *ent.Procedure) (*ent.Member, error)
	Project(context.Context, *ent.Procedure) (*ent.Project, error)
	Comments(ctx context.Context, p *ent.Procedure, first, last *int) ([]*ent.Comment, error)
}

// appendProcedureVia is appendProcedure through pr, which a list reuses for
// all its items.
func appendProcedureVia(ctx context.Context, pr procedureEdges, b []byte, p *ent.Procedure) ([]byte, error) {
	cat, err := pr.Category(ctx, p)
	if err != nil {
		return nil, err
	}
	doer, err := pr.Doer(ctx, p)
	if err != nil {
		return nil, err
	}
	proj, err := pr.Project(ctx, p)
	if err != nil {
		return nil, err
	}
	// The default view: every comment (a procedure over the bound on
	// comments from before it: its newest).
	comments, err := pr.Comments(ctx, p, nil, nil)
	if err != nil {
		return nil, err
	}
	return appendProcedure(b, p, cat, doer, proj, comments)
}

func (a *API) writeProcedure(w http.ResponseWriter, r *http.Request, p *ent.Procedure, err error) error {
	if err != nil {
		return err
	}
	buf := getBody(procedureSizeHint)
	defer putBody(buf)
	body, err := a.appendProcedure(r.Context(), (*buf)[:0], p)
	if err != nil {
		return err
	}
	*buf = body
	w.Header().Set("ETag", ETag(p.UpdatedAt))
	return middleware.WriteJSONBody(w, http.StatusOK, body)
}

// procedureSorts maps sortBy values to GraphQL order fields.
var procedureSorts = map[string]model.ProcedureOrderField{
	"createdAt":    model.ProcedureOrderFieldCreatedAt,
	"dueAt":        model.ProcedureOrderFieldDueAt,
	"project.name": model.ProcedureOrderFieldProjectName,
	"name":         model.ProcedureOrderFieldName,
}

// page turns page/limit into the resolver's first/after.
func page(p *params, def, max int) (*int, *string) {
	n := p.integer(1, 1, 1_000_000, "page")
	limit := p.integer(def, 1, max, "limit", "pageSize", "perPage")
	var after *string
	if n > 1 {
		c := string(core.CursorAt((n-1)*limit - 1))
		after = &c
	}
	return &limit, after
}

func (a *API) listProcedures(w http.ResponseWriter, r *http.Request) error {
	p := newParams(r.URL.Query())
	first, after := page(p, core.DefaultProcedurePageSize, core.MaxProcedurePageSize)
	sortBy := p.enum(names(core.ProcedureSorts), "sortBy")
	order := p.enum([]string{"asc", "desc"}, "sortOrder", "order")
	filter := &model.ProcedureFilter{
		Search:     optText(p.text("search", "q")),
		CategoryID: optText(p.id("categoryId")),
		DoerID:     optText(p.id("doerId")),
		ProjectID:  optText(p.id("projectId")),
		DueFrom:    p.timestamp("startedAt"),
		DueTo:      p.timestamp("dueAt"),
	}
	if s := p.enum(names(procedure.StateValues()), "state"); s != "" {
		st := procedure.State(s)
		filter.State = &st
	}
	if s := p.enum(names(procedure.PriorityValues()), "priority"); s != "" {
		pr := procedure.Priority(s)
		filter.Priority = &pr
	}
	if err := p.finish(); err != nil {
		return err
	}
	orderBy := &model.ProcedureOrder{Field: model.ProcedureOrderFieldCreatedAt, Direction: model.OrderDirectionDesc}
	if sortBy != "" {
		orderBy.Field = procedureSorts[sortBy]
	}
	if order == "asc" {
		orderBy.Direction = model.OrderDirectionAsc
	}
	conn, err := a.r.Query().Procedures(r.Context(), first, after, nil, nil, filter, orderBy)
	if err != nil {
		return err
	}
	// The List envelope, written as encoding/json writes List[T], into a
	// pooled buffer: a page is tens of kilobytes, and the response writer
	// copies it (http.ResponseWriter.Write keeps no reference to it).
	buf := getBody(procedureSizeHint * (len(conn.Nodes) + 1))
	defer putBody(buf)
	body := append((*buf)[:0], `{"data":[`...)
	pr := a.r.Procedure()
	// A page is bounded like every response (--max-response-mb): it stops
	// once past the bound, one procedure at most beyond it (one procedure
	// always fits).
	bound := a.r.ResponseBytes()
	for i, n := range conn.Nodes {
		if i > 0 {
			body = append(body, ',')
		}
		if body, err = appendProcedureVia(r.Context(), pr, body, n); err != nil {
			return err
		}
		if len(body) > bound {
			return apperr.ResponseTooLarge(bound, "ask for a smaller page (limit), or narrow the list with its filters")
		}
	}
	body = append(body, `],"meta":{"total":`...)
	body = strconv.AppendInt(body, int64(conn.TotalCount), 10)
	body = append(body, "}}"...)
	*buf = body
	return middleware.WriteJSONBody(w, http.StatusOK, body)
}

// procedureSizeHint is about what a procedure with its edges and a few
// comments takes, so that a page's body is rarely copied as it grows.
const procedureSizeHint = 1536

// bodies are response buffers of procedure lists, reused across requests.
var bodies sync.Pool

// maxPooledBody bounds the buffers kept: a rare huge page (long contents)
// is left to the collector rather than held by the pool.
const maxPooledBody = 1 << 20

// getBody returns an empty buffer of at least size bytes from the pool.
func getBody(size int) *[]byte {
	if b, ok := bodies.Get().(*[]byte); ok {
		if cap(*b) >= size {
			return b
		}
		*b = make([]byte, 0, size)
		return b
	}
	b := make([]byte, 0, size)
	return &b
}

// putBody returns b to the pool, unless it grew too large to keep.
func putBody(b *[]byte) {
	if cap(*b) > maxPooledBody {
		return
	}
	*b = (*b)[:0]
	bodies.Put(b)
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// procedureReadOnly are fields of the Procedure shape a client may send back
// unchanged; they are ignored.
var procedureReadOnly = []string{"id", "shortId", "creatorId", "createdAt", "updatedAt", "workspaceId", "category", "doer", "project", "comments"}

func (a *API) createProcedure(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	in := model.CreateProcedureInput{
		Name:              deref(value(b.str("name"))),
		Priority:          procedure.Priority(deref(value(b.str("priority")))),
		State:             procedure.State(deref(value(b.str("state")))),
		CategoryID:        deref(value(b.str("categoryId"))),
		DoerID:            deref(value(b.str("doerId"))),
		ProjectID:         deref(value(b.str("projectId"))),
		GenerateProcedure: value(b.boolean("generateProcedure")),
		CaptureID:         value(b.str("captureId")),
		DisplayVideo:      value(b.boolean("displayVideo")),
		IsFineTunedData:   value(b.boolean("isFineTunedData")),
	}
	if due := value(b.timestamp("dueAt")); due != nil {
		in.DueAt = *due
	}
	if raw, ok := b.raw("content"); ok {
		in.Content = raw
	}
	if s := value(b.str("contentType")); s != nil {
		v := model.ContentType(*s)
		in.ContentType = &v
	}
	if s := value(b.str("docStyle")); s != nil {
		v := model.DocStyle(*s)
		in.DocStyle = &v
	}
	if s := value(b.str("language")); s != nil {
		v := model.Language(*s)
		in.Language = &v
	}
	b.ignore("position", "workspaceId")
	if err := b.finish(); err != nil {
		return err
	}
	p, err := a.r.Mutation().CreateProcedure(r.Context(), in)
	return a.writeProcedure(w, r, p, err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (a *API) getProcedure(w http.ResponseWriter, r *http.Request) error {
	p, err := a.r.Query().Procedure(r.Context(), r.PathValue("id"))
	return a.writeProcedure(w, r, p, err)
}

func (a *API) updateProcedure(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	b.ignore(procedureReadOnly...)
	in := model.UpdateProcedureInput{
		Name:            b.str("name"),
		Priority:        enumField[procedure.Priority](b.str("priority")),
		State:           enumField[procedure.State](b.str("state")),
		Content:         b.str("content"),
		CategoryID:      b.str("categoryId"),
		DoerID:          b.str("doerId"),
		ProjectID:       b.str("projectId"),
		DueAt:           b.timestamp("dueAt"),
		Position:        b.number("position"),
		CaptureID:       b.str("captureId"),
		DisplayVideo:    b.boolean("displayVideo"),
		IsFineTunedData: b.boolean("isFineTunedData"),
	}
	if err := b.finish(); err != nil {
		return err
	}
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	p, err := a.r.Mutation().UpdateProcedure(r.Context(), r.PathValue("id"), in, ifMatch)
	return a.writeProcedure(w, r, p, err)
}

// enumField converts a string field to a string-kinded enum field.
func enumField[T ~string](o graphql.Omittable[*string]) graphql.Omittable[*T] {
	v, set := o.ValueOK()
	if !set {
		return graphql.Omittable[*T]{}
	}
	if v == nil {
		return graphql.OmittableOf[*T](nil)
	}
	e := T(*v)
	return graphql.OmittableOf(&e)
}

func (a *API) deleteProcedure(w http.ResponseWriter, r *http.Request) error {
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	if _, err := a.r.Mutation().DeleteProcedure(r.Context(), r.PathValue("id"), ifMatch); err != nil {
		return err
	}
	return ok(w, Deleted{Success: true})
}

func (a *API) addComment(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	text := value(b.str("text"))
	if err := b.finish(); err != nil {
		return err
	}
	c, err := a.r.Mutation().AddComment(r.Context(), model.AddCommentInput{ProcedureID: r.PathValue("id"), Text: deref(text)})
	if err != nil {
		return err
	}
	return ok(w, commentShape(c))
}

// listParams reads the parameters of the project, category and member lists.
func listParams(r *http.Request) (first *int, after *string, search *string, err error) {
	p := newParams(r.URL.Query())
	first, after = page(p, core.DefaultListPageSize, core.MaxListPageSize)
	search = optText(p.text("search", "q"))
	return first, after, search, p.finish()
}

func (a *API) listProjects(w http.ResponseWriter, r *http.Request) error {
	first, after, search, err := listParams(r)
	if err != nil {
		return err
	}
	conn, err := a.r.Query().Projects(r.Context(), first, after, nil, nil, search)
	if err != nil {
		return err
	}
	out := List[Project]{Data: make([]Project, len(conn.Nodes)), Meta: Meta{Total: conn.TotalCount}}
	for i, n := range conn.Nodes {
		out.Data[i] = projectShape(n)
	}
	return ok(w, out)
}

// projectReadOnly are fields of the Project shape a client may send back
// unchanged; they are ignored.
var projectReadOnly = []string{"id", "workspaceId", "createdAt", "updatedAt"}

func (a *API) createProject(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	in := model.CreateProjectInput{Name: deref(value(b.str("name"))), StartedAt: value(b.timestamp("startedAt")), DueAt: value(b.timestamp("dueAt"))}
	if err := b.finish(); err != nil {
		return err
	}
	p, err := a.r.Mutation().CreateProject(r.Context(), in)
	if err != nil {
		return err
	}
	return withETag(w, p.UpdatedAt, projectShape(p))
}

func (a *API) getProject(w http.ResponseWriter, r *http.Request) error {
	p, err := a.r.Query().Project(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return withETag(w, p.UpdatedAt, projectShape(p))
}

func (a *API) updateProject(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	b.ignore(projectReadOnly...)
	in := model.UpdateProjectInput{Name: b.str("name"), StartedAt: b.timestamp("startedAt"), DueAt: b.timestamp("dueAt")}
	if err := b.finish(); err != nil {
		return err
	}
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	p, err := a.r.Mutation().UpdateProject(r.Context(), r.PathValue("id"), in, ifMatch)
	if err != nil {
		return err
	}
	return withETag(w, p.UpdatedAt, projectShape(p))
}

func (a *API) deleteProject(w http.ResponseWriter, r *http.Request) error {
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	if _, err := a.r.Mutation().DeleteProject(r.Context(), r.PathValue("id"), ifMatch); err != nil {
		return err
	}
	return ok(w, Deleted{Success: true})
}

func (a *API) listCategories(w http.ResponseWriter, r *http.Request) error {
	first, after, search, err := listParams(r)
	if err != nil {
		return err
	}
	conn, err := a.r.Query().Categories(r.Context(), first, after, nil, nil, search)
	if err != nil {
		return err
	}
	out := List[Category]{Data: make([]Category, len(conn.Nodes)), Meta: Meta{Total: conn.TotalCount}}
	for i, n := range conn.Nodes {
		out.Data[i] = categoryShape(n)
	}
	return ok(w, out)
}

func (a *API) createCategory(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	name := deref(value(b.str("name")))
	if err := b.finish(); err != nil {
		return err
	}
	c, err := a.r.Mutation().CreateCategory(r.Context(), model.CreateCategoryInput{Name: name})
	if err != nil {
		return err
	}
	return withETag(w, c.UpdatedAt, categoryShape(c))
}

func (a *API) getCategory(w http.ResponseWriter, r *http.Request) error {
	c, err := a.r.Query().Category(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return withETag(w, c.UpdatedAt, categoryShape(c))
}

// categoryReadOnly are fields of the Category shape a client may send back
// unchanged; they are ignored.
var categoryReadOnly = []string{"id", "workspaceId", "createdAt", "updatedAt"}

func (a *API) updateCategory(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	b.ignore(categoryReadOnly...)
	in := model.UpdateCategoryInput{Name: b.str("name")}
	if err := b.finish(); err != nil {
		return err
	}
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	c, err := a.r.Mutation().UpdateCategory(r.Context(), r.PathValue("id"), in, ifMatch)
	if err != nil {
		return err
	}
	return withETag(w, c.UpdatedAt, categoryShape(c))
}

func (a *API) deleteCategory(w http.ResponseWriter, r *http.Request) error {
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	if _, err := a.r.Mutation().DeleteCategory(r.Context(), r.PathValue("id"), ifMatch); err != nil {
		return err
	}
	return ok(w, Deleted{Success: true})
}

func (a *API) listMembers(w http.ResponseWriter, r *http.Request) error {
	first, after, search, err := listParams(r)
	if err != nil {
		return err
	}
	conn, err := a.r.Query().Members(r.Context(), first, after, nil, nil, search)
	if err != nil {
		return err
	}
	out := List[Member]{Data: make([]Member, len(conn.Nodes)), Meta: Meta{Total: conn.TotalCount}}
	for i, n := range conn.Nodes {
		out.Data[i] = memberShape(n)
	}
	return ok(w, out)
}

func (a *API) getMember(w http.ResponseWriter, r *http.Request) error {
	m, err := a.r.Query().Member(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, memberShape(m))
}

// names spells enum values as the strings a query parameter takes.
func names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
