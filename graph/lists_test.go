package graph_test

// Lists of procedures, procedure edges and comments are marshalled element
// after element once graph.Resolver.PrimeList has primed what their
// selection resolves (graph/internal/gqlgen). If PrimeList left an edge
// unprimed, each element's field would wait out the dataloader's batch
// window alone and read its one key: these tests count the statements.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

var _ generated.ListPrimer = (*graph.Resolver)(nil)

// PrimeList primes the edges of Procedure and Comment by name: a resolver
// field added to either must be primed by PrimeList too.
func TestPrimeListCoversResolverFields(t *testing.T) {
	for _, tc := range []struct {
		resolver reflect.Type
		primed   []string
	}{
		{reflect.TypeFor[generated.ProcedureResolver](), []string{"Category", "Comments", "Doer", "History", "Project"}},
		{reflect.TypeFor[generated.CommentResolver](), []string{"Author"}},
		{reflect.TypeFor[generated.EventActorResolver](), []string{"Member"}},
	} {
		var got []string
		for i := range tc.resolver.NumMethod() {
			got = append(got, tc.resolver.Method(i).Name)
		}
		if !slices.Equal(got, tc.primed) {
			t.Errorf("%s resolves %v; PrimeList primes %v: prime the new field there (graph/lists.go)", tc.resolver, got, tc.primed)
		}
	}
	// ProcedureEdge has no resolver field at all: its node is primed with
	// the list.
	if _, ok := reflect.TypeFor[generated.ResolverRoot]().MethodByName("ProcedureEdge"); ok {
		t.Error("ProcedureEdge has a resolver field now; PrimeList does not prime it (graph/lists.go)")
	}
}

func TestPrimeList(t *testing.T) {
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	const query = `{ procedures(first: 50) {
		nodes { id category { id } doer { id } project { id } comments { nodes { id author { id } } } }
		edges { node { ...Edges } }
	} }
	fragment Edges on Procedure { category { name } doer { name } project { name } comments { nodes { text author { name } } } }`
	doc, errs := gqlparser.LoadQuery(schema, query)
	if errs != nil {
		t.Fatal(errs)
	}
	oc := &graphql.OperationContext{RawQuery: query, Doc: doc, Operation: doc.Operations[0], Variables: map[string]any{}}
	// selection returns the selection set of the field at path.
	selection := func(path ...string) ast.SelectionSet {
		sel := doc.Operations[0].SelectionSet
		for _, name := range path {
			var next ast.SelectionSet
			for _, f := range graphql.CollectFields(oc, sel, nil) {
				if f.Name == name {
					next = f.Selections
				}
			}
			if next == nil {
				t.Fatalf("no field %v", path)
			}
			sel = next
		}
		return sel
	}
	nodes, edges := selection("procedures", "nodes"), selection("procedures", "edges")
	commentsWithAuthor := selection("procedures", "nodes", "comments", "nodes")
	commentsOnly, _ := gqlparser.LoadQuery(schema, `{ procedures { nodes { comments { nodes { id text createdAt } } } } }`)

	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := viewer.System(context.Background())
		if _, err := bench.Seed(ctx, db.Client, "Acme", "ACME", bench.Shape{Procedures: 40, Projects: 5, Categories: 4, Members: 6, MaxComments: 3}, 1); err != nil {
			t.Fatal(err)
		}
		procs, err := db.Client.Procedure.Query().Order(procedure.ByShortID()).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := graph.NewResolver(nil)
		// resolve resolves every edge of procs as the field resolvers do,
		// and returns the statements it cost. Outside a field, the
		// comments' resolver is told what the document's comments show
		// (none shows updatedAt), as its field's selection would tell it.
		resolve := func(t *testing.T, ctx context.Context) int64 {
			t.Helper()
			ctx = loader.ShowingComments(ctx, loader.SkipCommentUpdatedAt)
			before := db.Statements()
			comments := 0
			for _, p := range procs {
				if _, err := r.Procedure().Category(ctx, p); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Procedure().Doer(ctx, p); err != nil {
					t.Fatal(err)
				}
				if pr, err := r.Procedure().Project(ctx, p); err != nil || pr == nil {
					t.Fatalf("project of %s: %v, %v", p.ShortID, pr, err)
				}
				last := limits.EmbeddedComments
				cs, err := r.Procedure().Comments(ctx, p, nil, nil, &last, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cs.Nodes {
					comments++
					if m, err := r.Comment().Author(ctx, c); err != nil || m == nil {
						t.Fatalf("author of %s: %v, %v", c.ID, m, err)
					}
				}
			}
			if comments == 0 {
				t.Fatal("no comments: authors went untested")
			}
			return db.Statements() - before
		}
		// primeList runs PrimeList in a fresh request and returns whether it
		// primed and the statements it cost; then fn runs in that request.
		primeList := func(t *testing.T, sel ast.SelectionSet, list any, fn func(ctx context.Context)) (bool, int64) {
			t.Helper()
			var (
				ok bool
				n  int64
			)
			h := loader.Middleware(db)(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
				ctx := graphql.WithOperationContext(viewer.System(req.Context()), oc)
				before := db.Statements()
				ok = r.PrimeList(ctx, sel, list)
				n = db.Statements() - before
				fn(ctx)
			}))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			return ok, n
		}

		t.Run("Procedures", func(t *testing.T) {
			ok, n := primeList(t, nodes, procs, func(ctx context.Context) {
				if n := resolve(t, ctx); n != 0 {
					t.Errorf("edges of a primed list cost %d statements, want 0", n)
				}
			})
			// Categories, members (doers and authors), projects, comments.
			if !ok || n > 4 {
				t.Fatalf("PrimeList = %v at %d statements; want true at ≤ 4", ok, n)
			}
		})
		t.Run("Edges", func(t *testing.T) {
			list := make([]*model.ProcedureEdge, len(procs))
			for i, p := range procs {
				list[i] = &model.ProcedureEdge{Node: p, Cursor: "c"}
			}
			ok, n := primeList(t, edges, list, func(ctx context.Context) {
				if n := resolve(t, ctx); n != 0 {
					t.Errorf("edges of a primed list cost %d statements, want 0", n)
				}
			})
			if !ok || n > 4 {
				t.Fatalf("PrimeList = %v at %d statements; want true at ≤ 4", ok, n)
			}
		})
		t.Run("CommentAuthors", func(t *testing.T) {
			comments, err := db.Client.Comment.Query().All(ctx)
			if err != nil || len(comments) < 2 {
				t.Fatalf("%d comments, %v", len(comments), err)
			}
			ok, n := primeList(t, commentsWithAuthor, comments, func(ctx context.Context) {
				before := db.Statements()
				for _, c := range comments {
					if m, err := r.Comment().Author(ctx, c); err != nil || m == nil {
						t.Fatalf("author of %s: %v, %v", c.ID, m, err)
					}
				}
				if n := db.Statements() - before; n != 0 {
					t.Errorf("authors of a primed list cost %d statements, want 0", n)
				}
			})
			if !ok || n != 1 {
				t.Fatalf("PrimeList = %v at %d statements; want true at 1", ok, n)
			}
			// Without author, nothing of a comment waits: no statement.
			sel := commentsOnly.Operations[0].SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field).SelectionSet[0].(*ast.Field).SelectionSet
			if ok, n := primeList(t, sel, comments, func(context.Context) {}); !ok || n != 0 {
				t.Fatalf("PrimeList without author = %v at %d statements; want true at 0", ok, n)
			}
		})
		t.Run("Refused", func(t *testing.T) {
			// A list PrimeList does not know, or with a nil element, is
			// marshalled concurrently: PrimeList says false and reads nothing.
			for _, list := range []any{[]*ent.Token{{}}, []*ent.Project{nil}, []*ent.Procedure{procs[0], nil}, []*model.ProcedureEdge{{Node: nil}}} {
				if ok, n := primeList(t, nodes, list, func(context.Context) {}); ok || n != 0 {
					t.Errorf("PrimeList(%T) = %v at %d statements; want false at 0", list, ok, n)
				}
			}
		})
	})
}

// Procedures, comments and their edges are written by the plugin's own
// marshaller (plain fields straight into the JSON): the response must be
// byte for byte what gqlgen's would be: fields in selection order under
// their aliases, merged through fragments, __typename, nulls, and strings
// escaped as gqlgen escapes such text (jsontext.AppendString writes
// encoding/json's escapes, which differ from gqlgen's only for control
// characters other than \n \r \t, U+2028/U+2029 and invalid UTF-8), then
// HTML-escaped by gqlhttp's direct_transport.go.
func TestInlineObjectsJSON(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		name := `"Quoted" \ <b> & ü 🎉 x`
		p := createProc(t, s, w.MemberToken, procInput(w, name, obj("content", "line1\nline2\t\"x\"")))
		text := "first\nsecond\t\\ </script>"
		addComment(t, s, w.MemberToken, p.ID, text)
		addComment(t, s, w.MemberToken, p.ID, "again")
		const selection = `__typename i: id name n: name content categoryId doer { id } ...F
			comments(last: 5) { nodes { t: text __typename author { id } } } category { c: name name }`
		const fragment = ` fragment F on Procedure { name position displayVideo createdAt priority }`
		q := func(v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		object := `{"__typename":"Procedure","i":` + q(p.ID) + `,"name":` + q(name) + `,"n":` + q(name) +
			`,"content":` + q("line1\nline2\t\"x\"") + `,"categoryId":` + q(w.CategoryID) + `,"doer":{"id":` + q(w.MemberID) + `},"position":` + strconv.FormatFloat(p.Position, 'g', -1, 64) +
			`,"displayVideo":false,"createdAt":` + q(p.CreatedAt) + `,"priority":"MEDIUM"` +
			`,"comments":{"nodes":[{"t":` + q(text) + `,"__typename":"Comment","author":{"id":` + q(w.MemberID) + `}},{"t":"again","__typename":"Comment","author":{"id":` + q(w.MemberID) + `}}]}` +
			`,"category":{"c":"Acme category","name":"Acme category"}}`
		for _, tc := range []struct{ name, query, want string }{
			{"Record", `query($id: ID!) { procedure(id: $id) { ` + selection + ` } }` + fragment, `{"procedure":` + object + `}`},
			{"Page", `{ procedures(first: 5) { nodes { ` + selection + ` } edges { cursor node { __typename i: id } } } }` + fragment, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.GraphQL(t, w.MemberToken, tc.query, obj("id", p.ID))
				if len(r.Errors) > 0 {
					t.Fatalf("%+v", r.Errors)
				}
				want := tc.want
				if want == "" {
					var page struct {
						Procedures struct{ Edges []struct{ Cursor string } }
					}
					if err := json.Unmarshal(r.Data, &page); err != nil || len(page.Procedures.Edges) != 1 {
						t.Fatalf("%s: %v", r.Data, err)
					}
					want = `{"procedures":{"nodes":[` + object + `],"edges":[{"cursor":` + q(page.Procedures.Edges[0].Cursor) +
						`,"node":{"__typename":"Procedure","i":` + q(p.ID) + `}}]}}`
				}
				if string(r.Data) != want {
					t.Fatalf("data =\n%s\nwant\n%s", r.Data, want)
				}
			})
		}
	})
}
