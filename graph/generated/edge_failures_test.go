package generated_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/graph/model"
)

// failingRoot serves Query.procedures from memory, and procedures' edges
// that fail: by procedure (its position), the category's read fails, the
// doer's panics, the project's read returns nothing (a null in a non-null
// edge) or fails. The rest of the schema is never asked for (nil).
type failingRoot struct {
	generated.ResolverRoot
	procs []*ent.Procedure
}

func (r failingRoot) Query() generated.QueryResolver         { return failingQuery{r: r} }
func (r failingRoot) Procedure() generated.ProcedureResolver { return failingEdges{} }

// PrimeList marshals lists in order, so that errors come in order.
func (failingRoot) PrimeList(context.Context, ast.SelectionSet, any) bool { return true }

type failingQuery struct {
	generated.QueryResolver
	r failingRoot
}

func (q failingQuery) Procedures(context.Context, *int, *string, *int, *string, *model.ProcedureFilter, *model.ProcedureOrder) (*model.ProcedureConnection, error) {
	return &model.ProcedureConnection{Nodes: q.r.procs, PageInfo: &model.PageInfo{}, TotalCount: len(q.r.procs)}, nil
}

type failingEdges struct{ generated.ProcedureResolver }

func (failingEdges) Category(_ context.Context, p *ent.Procedure) (*ent.Category, error) {
	if p.Position == 1 {
		return nil, errors.New("category read failed")
	}
	return &ent.Category{ID: uuid.Max, Name: "Kept"}, nil
}

func (failingEdges) Doer(_ context.Context, p *ent.Procedure) (*ent.Member, error) {
	if p.Position == 2 {
		panic("doer read panicked")
	}
	return nil, nil
}

func (failingEdges) Project(_ context.Context, p *ent.Procedure) (*ent.Project, error) {
	switch p.Position {
	case 3:
		return nil, nil
	case 4:
		return nil, errors.New("project read failed")
	}
	return &ent.Project{Name: "Kept"}, nil
}

// TestEdgeFailuresAnswerAsGqlgen: an edge that fails, panics or is null
// where the schema allows none answers what gqlgen's field function
// answered, byte for byte: the error at the field's path, and the null
// where the schema puts it (the edge, or the procedure for a non-null
// project, and then the list, as nodes is [Procedure!]!).
func TestEdgeFailuresAnswerAsGqlgen(t *testing.T) {
	var procs []*ent.Procedure
	for i := range 5 {
		procs = append(procs, &ent.Procedure{ID: uuid.New(), Name: "P", Position: float64(i)})
	}
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: failingRoot{procs: procs}}))
	srv.AddTransport(transport.POST{})
	srv.SetRecoverFunc(func(_ context.Context, p any) error { return errors.New("recovered") })
	for _, tc := range []struct{ name, query, want string }{
		{"NullableEdges", `{ procedures { nodes { name c: category { name } doer { name } } } }`,
			`"path":["procedures","nodes",1,"c"]`},
		{"PanicUnderAlias", `{ procedures { nodes { d: doer { __typename } } } }`, `"path":["procedures","nodes",2,"d"]`},
		{"NonNullEdge", `{ procedures { totalCount nodes { project { name } } } }`, `"path":["procedures","nodes",3,"project"]`},
		{"NonNullEdgeFails", `{ procedures { nodes { name p: project { name } } } }`, `project read failed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := serveQuery(t, srv, tc.query, false)
			byGqlgen := serveQuery(t, srv, tc.query, true)
			if !bytes.Equal(written, byGqlgen) {
				t.Fatalf("written:\n%s\ngqlgen's:\n%s", written, byGqlgen)
			}
			if !bytes.Contains(written, []byte(tc.want)) {
				t.Fatalf("the answer has no %s: %s", tc.want, written)
			}
		})
	}
}

func serveQuery(t *testing.T, srv http.Handler, query string, byGqlgen bool) []byte {
	t.Helper()
	generated.SetEdgesByGqlgen(byGqlgen)
	defer generated.SetEdgesByGqlgen(false)
	body, _ := json.Marshal(map[string]string{"query": query})
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec.Body.Bytes()
}
