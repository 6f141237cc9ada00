package rest

import (
	"context"
	"net/http"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/core"
)

// The project, category and member endpoints. Their records have no edges:
// each is answered in its shape with encoding/json.

// listParams reads the parameters of the project, category and member lists.
func listParams(r *http.Request) (core.ListFilter, core.Window, error) {
	p := newParams(r.URL.Query())
	window := page(p, core.DefaultListPageSize, core.MaxListPageSize)
	filter := core.ListFilter{Search: p.text("search", "q")}
	return filter, window, p.finish()
}

// writeList answers a page of records, each in its shape, in the List
// envelope with the total of the whole list.
func writeList[N, S any](w http.ResponseWriter, list *core.List[N], err error, shape func(*N) S) error {
	if err != nil {
		return err
	}
	out := List[S]{Data: make([]S, len(list.Items)), Meta: Meta{Total: list.Total}}
	for i, n := range list.Items {
		out.Data[i] = shape(n)
	}
	return ok(w, out)
}

// deleteWith answers a DELETE through del, the resolver of the record's
// delete mutation, honouring If-Match.
func deleteWith(w http.ResponseWriter, r *http.Request, del func(ctx context.Context, id string, ifUpdatedAt *time.Time) (*model.DeletePayload, error)) error {
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	if _, err := del(r.Context(), r.PathValue("id"), ifMatch); err != nil {
		return err
	}
	return ok(w, Deleted{Success: true})
}

// readUpdate reads a PUT: its body, decoded into an input by fields
// (ignoring the read-only fields a client may echo back), and its If-Match.
func readUpdate[In any](w http.ResponseWriter, r *http.Request, readOnly []string, fields func(*body) In) (In, *time.Time, error) {
	var in In
	b, err := readBody(w, r)
	if err != nil {
		return in, nil, err
	}
	b.ignore(readOnly...)
	in = fields(b)
	if err := b.finish(); err != nil {
		return in, nil, err
	}
	ifMatch, err := parseIfMatch(r.Header.Get("If-Match"))
	return in, ifMatch, err
}

// writeProject answers p with its ETag, or err.
func writeProject(w http.ResponseWriter, p *ent.Project, err error) error {
	if err != nil {
		return err
	}
	return withETag(w, p.UpdatedAt, projectShape(p))
}

// writeCategory answers c with its ETag, or err.
func writeCategory(w http.ResponseWriter, c *ent.Category, err error) error {
	if err != nil {
		return err
	}
	return withETag(w, c.UpdatedAt, categoryShape(c))
}

func (a *API) listProjects(w http.ResponseWriter, r *http.Request) error {
	filter, window, err := listParams(r)
	if err != nil {
		return err
	}
	list, err := a.r.ProjectPage(r.Context(), filter, window)
	return writeList(w, list, err, projectShape)
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
	return writeProject(w, p, err)
}

func (a *API) getProject(w http.ResponseWriter, r *http.Request) error {
	p, err := a.r.Query().Project(r.Context(), r.PathValue("id"))
	return writeProject(w, p, err)
}

func (a *API) updateProject(w http.ResponseWriter, r *http.Request) error {
	in, ifMatch, err := readUpdate(w, r, projectReadOnly, func(b *body) model.UpdateProjectInput {
		return model.UpdateProjectInput{Name: b.str("name"), StartedAt: b.timestamp("startedAt"), DueAt: b.timestamp("dueAt")}
	})
	if err != nil {
		return err
	}
	p, err := a.r.Mutation().UpdateProject(r.Context(), r.PathValue("id"), in, ifMatch)
	return writeProject(w, p, err)
}

func (a *API) deleteProject(w http.ResponseWriter, r *http.Request) error {
	return deleteWith(w, r, a.r.Mutation().DeleteProject)
}

func (a *API) listCategories(w http.ResponseWriter, r *http.Request) error {
	filter, window, err := listParams(r)
	if err != nil {
		return err
	}
	list, err := a.r.CategoryPage(r.Context(), filter, window)
	return writeList(w, list, err, categoryShape)
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
	return writeCategory(w, c, err)
}

func (a *API) getCategory(w http.ResponseWriter, r *http.Request) error {
	c, err := a.r.Query().Category(r.Context(), r.PathValue("id"))
	return writeCategory(w, c, err)
}

// categoryReadOnly are fields of the Category shape a client may send back
// unchanged; they are ignored.
var categoryReadOnly = []string{"id", "workspaceId", "createdAt", "updatedAt"}

func (a *API) updateCategory(w http.ResponseWriter, r *http.Request) error {
	in, ifMatch, err := readUpdate(w, r, categoryReadOnly, func(b *body) model.UpdateCategoryInput {
		return model.UpdateCategoryInput{Name: b.str("name")}
	})
	if err != nil {
		return err
	}
	c, err := a.r.Mutation().UpdateCategory(r.Context(), r.PathValue("id"), in, ifMatch)
	return writeCategory(w, c, err)
}

func (a *API) deleteCategory(w http.ResponseWriter, r *http.Request) error {
	return deleteWith(w, r, a.r.Mutation().DeleteCategory)
}

func (a *API) listMembers(w http.ResponseWriter, r *http.Request) error {
	filter, window, err := listParams(r)
	if err != nil {
		return err
	}
	list, err := a.r.MemberPage(r.Context(), filter, window)
	return writeList(w, list, err, memberShape)
}

func (a *API) getMember(w http.ResponseWriter, r *http.Request) error {
	m, err := a.r.Query().Member(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, memberShape(m))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
