package rest

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/middleware"
)

// The procedure endpoints. Every response embeds all of a procedure's edges
// (loader.AllEdges), which the resolver entries prime; the edges are then
// read through the procedure's field resolvers, as GraphQL reads them.

// procedureEdges are the GraphQL resolvers of a procedure's edges.
type procedureEdges interface {
	Category(context.Context, *ent.Procedure) (*ent.Category, error)
	Doer(context.Context, *ent.Procedure) (*ent.Member, error)
	Project(context.Context, *ent.Procedure) (*ent.Project, error)
	Comments(ctx context.Context, p *ent.Procedure, first *int, after *string, last *int, before *string) (*model.CommentConnection, error)
}

// appendProcedureVia appends p with its edges to b, read through pr (which
// a list reuses for all its items) from the request's dataloaders.
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
	// The newest limits.EmbeddedComments, as loader.AllEdges primes them
	// (without what REST does not show: ctx is ShowingComments'), and how
	// many the procedure holds; GET /procedures/{id}/comments pages
	// through all of them.
	last := limits.EmbeddedComments
	comments, err := pr.Comments(ctx, p, nil, nil, &last, nil)
	if err != nil {
		return nil, err
	}
	return appendProcedure(b, p, cat, doer, proj, comments.Nodes, comments.TotalCount)
}

// writeProcedure answers p with its edges and its ETag, or err.
func (a *API) writeProcedure(w http.ResponseWriter, r *http.Request, p *ent.Procedure, err error) error {
	if err != nil {
		return err
	}
	buf := getBody(procedureSizeHint)
	defer putBody(buf)
	body, err := appendProcedureVia(loader.ShowingComments(r.Context(), loader.RESTComments), a.r.Procedure(), (*buf)[:0], p)
	if err != nil {
		return err
	}
	*buf = body
	w.Header().Set("ETag", ETag(p.UpdatedAt))
	return middleware.WriteJSONBody(w, http.StatusOK, body)
}

// one is the filter list of a single parameter's value: none when absent.
func one(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// maxPageNumber bounds page so that the offset it makes, (page-1)*limit,
// stays far from overflow.
const maxPageNumber = 1_000_000

// page reads page and limit as the window of that page (the OpenAPI
// document's pages() declares the same bounds and defaults).
func page(p *params, def, max int) core.Window {
	n := p.integer(1, 1, maxPageNumber, "page")
	limit := p.integer(def, 1, max, "limit", "pageSize", "perPage")
	return core.Window{First: &limit, Start: (n - 1) * limit}
}

func (a *API) listProcedures(w http.ResponseWriter, r *http.Request) error {
	p := newParams(r.URL.Query())
	window := page(p, core.DefaultProcedurePageSize, core.MaxProcedurePageSize)
	order := core.DefaultProcedureOrder
	if s := p.enum(names(core.ProcedureSorts), "sortBy"); s != "" {
		order.Field = core.ProcedureSort(s)
	}
	order.Desc = p.enum([]string{"asc", "desc"}, "sortOrder", "order") != "asc"
	filter := core.ProcedureFilter{
		Search:      p.text("search", "q"),
		CategoryIDs: one(p.id("categoryId")),
		DoerIDs:     one(p.id("doerId")),
		ProjectIDs:  one(p.id("projectId")),
		DueFrom:     p.timestamp("startedAt"),
		DueTo:       p.timestamp("dueAt"),
		// Checked here too, with the other parameters, so that one answer
		// names every bad parameter and an empty value is refused rather
		// than read as no filter.
		States:     one(p.enum(names(procedure.StateValues()), "state")),
		Priorities: one(p.enum(names(procedure.PriorityValues()), "priority")),
	}
	if err := p.finish(); err != nil {
		return err
	}
	list, err := a.r.ProceduresWithEdges(r.Context(), filter, order, window, loader.AllEdges)
	if err != nil {
		return err
	}
	// The List envelope, written as encoding/json writes List[T], into a
	// pooled buffer: a page is tens of kilobytes, and the response writer
	// copies it (http.ResponseWriter.Write keeps no reference to it).
	buf := getBody(procedureSizeHint * (len(list.Items) + 1))
	defer putBody(buf)
	body := append((*buf)[:0], `{"data":[`...)
	pr := a.r.Procedure()
	ctx := loader.ShowingComments(r.Context(), loader.RESTComments)
	// A page is bounded like every response (--max-response-mb): it stops
	// once past the bound, one procedure at most beyond it (one procedure
	// always fits).
	bound := a.r.ResponseBytes()
	for i, n := range list.Items {
		if i > 0 {
			body = append(body, ',')
		}
		if body, err = appendProcedureVia(ctx, pr, body, n); err != nil {
			return err
		}
		if len(body) > bound {
			return apperr.ResponseTooLarge(bound, "ask for a smaller page (limit), or narrow the list with its filters")
		}
	}
	body = append(body, `],"meta":{"total":`...)
	body = strconv.AppendInt(body, int64(list.Total), 10)
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

// procedureReadOnly are fields of the Procedure shape a client may send back
// unchanged; they are ignored.
var procedureReadOnly = []string{"id", "shortId", "creatorId", "createdAt", "updatedAt", "workspaceId", "category", "doer", "project", "comments", "commentCount"}

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
	p, err := a.r.CreateProcedureWithEdges(r.Context(), in, loader.AllEdges)
	return a.writeProcedure(w, r, p, err)
}

func (a *API) getProcedure(w http.ResponseWriter, r *http.Request) error {
	p, err := a.r.ProcedureWithEdges(r.Context(), r.PathValue("id"), loader.AllEdges)
	return a.writeProcedure(w, r, p, err)
}

func (a *API) updateProcedure(w http.ResponseWriter, r *http.Request) error {
	in, ifMatch, err := readUpdate(w, r, procedureReadOnly, func(b *body) model.UpdateProcedureInput {
		return model.UpdateProcedureInput{
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
	})
	if err != nil {
		return err
	}
	p, err := a.r.UpdateProcedureWithEdges(r.Context(), r.PathValue("id"), in, ifMatch, loader.AllEdges)
	return a.writeProcedure(w, r, p, err)
}

// enumField converts a string field to a string-kinded enum field (the core
// checks the value).
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
	return deleteWith(w, r, a.r.Mutation().DeleteProcedure)
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

// listComments answers a page of all of a procedure's comments, oldest
// first, in the List envelope: how a client reads past the newest
// limits.EmbeddedComments a procedure's answer embeds. A page holds at most
// core.MaxCommentPageSize comments, which always fit the bound on a
// response (limits.ResponseBytes), so it is not measured against it.
func (a *API) listComments(w http.ResponseWriter, r *http.Request) error {
	p := newParams(r.URL.Query())
	window := page(p, core.DefaultCommentPageSize, core.MaxCommentPageSize)
	if err := p.finish(); err != nil {
		return err
	}
	list, err := a.r.CommentPage(r.Context(), r.PathValue("id"), window)
	return writeList(w, list, err, embeddedCommentShape)
}

// names spells enum values as the strings a query parameter takes.
func names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
