package bench_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// listQuery is the frontend's list page: procedures with every nested edge
// and their newest 3 comments (every comment of the seeded shapes): a page
// of 100 costs 1 + 1 + 100 × 7 = 702 of the complexity limit.
const listQuery = `query List($first: Int!) {
  procedures(first: $first) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id shortId name priority state content categoryId doerId creatorId position
      dueAt createdAt updatedAt projectId workspaceId captureId displayVideo isFineTunedData
      category { id name }
      doer { id name email }
      project { id name }
      comments(last: 3) { id text createdAt }
    }
  }
}`

// twoViewsQuery is listQuery's page showing two views of each procedure's
// comments (its oldest, its newest 2), whose union is read at once.
const twoViewsQuery = `query Views($first: Int!) {
  procedures(first: $first) {
    totalCount
    nodes {
      id category { id } doer { id } project { id }
      comments(first: 1) { id }
      newest: comments(last: 2) { id text author { name } }
    }
  }
}`

type harness struct {
	db      *database.DB
	handler http.Handler
	token   string
}

func newHarness(t testing.TB, dialect string, shape bench.Shape) *harness {
	t.Helper()
	return newHarnessWith(t, dialect, shape, server.Deps{})
}

// newHarnessWith is newHarness serving with deps' options (DB, Service and
// Log are filled in).
func newHarnessWith(t testing.TB, dialect string, shape bench.Shape, deps server.Deps) *harness {
	t.Helper()
	db := dbtest.Open(t, dialect)
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Bench", "BEN", shape, 1)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	// A noise workspace: tenancy must keep its rows out of every count.
	noise := shape
	noise.Procedures /= 4
	if _, err := bench.Seed(ctx, db.Client, "Noise", "NOI", noise, 2); err != nil {
		t.Fatalf("seed noise: %v", err)
	}
	if dialect == "postgres" {
		// Production databases have statistics; a freshly bulk-loaded one
		// does not until autovacuum gets to it.
		if _, err := db.SQL.ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps.DB, deps.Service, deps.Log = db, core.New(db.Client), log
	h := server.NewHandler(deps)
	return &harness{db: db, handler: h, token: seeded.AdminToken}
}

func (h *harness) graphqlRequest(first int) *http.Request {
	return h.graphqlRequestOf(listQuery, first)
}

func (h *harness) graphqlRequestOf(query string, first int) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"first": first}})
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.token)
	return req
}

type listResponse struct {
	Data struct {
		Procedures struct {
			TotalCount int
			Nodes      []struct {
				ID       string
				Category *struct{ ID string }
				Doer     *struct{ ID string }
				Project  *struct{ ID string }
				Comments []struct{ ID string }
			}
		}
	}
	Errors []json.RawMessage
}

func (h *harness) list(t testing.TB, first int) (listResponse, int64) {
	t.Helper()
	return h.listOf(t, listQuery, first)
}

func (h *harness) listOf(t testing.TB, query string, first int) (listResponse, int64) {
	t.Helper()
	before := h.db.Statements()
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, h.graphqlRequestOf(query, first))
	statements := h.db.Statements() - before
	var out listResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("list: status %d: %s", rec.Code, rec.Body.String())
	}
	return out, statements
}

func (h *harness) restRequest(limit int) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/procedures?limit="+strconv.Itoa(limit), nil)
	req.Header.Set("Authorization", "Bearer "+h.token)
	return req
}

type restList struct {
	Data []struct {
		ID       string
		Category *struct{ ID string }
		Doer     *struct{ ID string }
		Project  *struct{ ID string }
		Comments []struct{ ID string }
	}
	Meta struct{ Total int }
}

func (h *harness) restList(t testing.TB, limit int) (restList, int64) {
	t.Helper()
	before := h.db.Statements()
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, h.restRequest(limit))
	statements := h.db.Statements() - before
	var out restList
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("REST list: status %d: %s", rec.Code, rec.Body.String())
	}
	return out, statements
}

// MaxListStatements is the most SQL a list page may cost, whatever its size:
// token lookup, page with its total, categories, members, projects, comments.
const MaxListStatements = 6

// TestProcedureListStatementCount proves there is no N+1: a page of 100
// procedures with every nested edge costs the same few statements as a page
// of 10, and so does a page of 100 showing two views of each procedure's
// comments (read together, in one statement).
func TestProcedureListStatementCount(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect, bench.Shape{Procedures: 300, Projects: 7, Categories: 5, Members: 6, MaxComments: 3})
			// The first use of a token records lastUsedAt (and bumps the
			// workspace version); the second fills the totals cache for
			// that version. The steady state measured below is what a
			// frontend paging through a list pays.
			h.list(t, 1)
			h.list(t, 1)
			counts := map[int]int64{}
			for _, first := range []int{10, 100} {
				out, n := h.list(t, first)
				if got := len(out.Data.Procedures.Nodes); got != first {
					t.Fatalf("first=%d returned %d procedures", first, got)
				}
				if out.Data.Procedures.TotalCount != 300 {
					t.Fatalf("totalCount = %d, want 300", out.Data.Procedures.TotalCount)
				}
				withComments := 0
				for _, p := range out.Data.Procedures.Nodes {
					if p.Category == nil || p.Doer == nil || p.Project == nil {
						t.Fatalf("procedure %s is missing an edge", p.ID)
					}
					if len(p.Comments) > 0 {
						withComments++
					}
				}
				if withComments == 0 {
					t.Fatalf("no procedure had comments: the comments loader went untested")
				}
				counts[first] = n
				t.Logf("%s: list of %d costs %d statements", dialect, first, n)
			}
			if counts[100] > MaxListStatements || counts[100] != counts[10] {
				t.Fatalf("statements: 10 → %d, 100 → %d; want equal and ≤ %d", counts[10], counts[100], MaxListStatements)
			}
			// Its categories, members and projects may all come from what
			// the pages before read (shared across reads of a version).
			out, n := h.listOf(t, twoViewsQuery, 100)
			if len(out.Data.Procedures.Nodes) != 100 || n > counts[10] {
				t.Fatalf("a page of 100 with two views of the comments: %d procedures, %d statements; want 100 and at most %d", len(out.Data.Procedures.Nodes), n, counts[10])
			}
		})
	}
}

// TestProcedureListStatementCountREST is the same proof for GET /procedures,
// which reaches the dataloaders through the same resolvers.
func TestProcedureListStatementCountREST(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect, bench.Shape{Procedures: 300, Projects: 7, Categories: 5, Members: 6, MaxComments: 3})
			h.restList(t, 1)
			h.restList(t, 1)
			counts := map[int]int64{}
			for _, limit := range []int{10, 100} {
				out, n := h.restList(t, limit)
				if len(out.Data) != limit || out.Meta.Total != 300 {
					t.Fatalf("limit=%d: %d items, total %d", limit, len(out.Data), out.Meta.Total)
				}
				for _, p := range out.Data {
					if p.Category == nil || p.Doer == nil || p.Project == nil || p.Comments == nil {
						t.Fatalf("procedure %s is missing an edge", p.ID)
					}
				}
				counts[limit] = n
				t.Logf("%s: GET /procedures?limit=%d costs %d statements", dialect, limit, n)
			}
			if counts[100] > MaxListStatements || counts[100] != counts[10] {
				t.Fatalf("statements: 10 → %d, 100 → %d; want equal and ≤ %d", counts[10], counts[100], MaxListStatements)
			}
		})
	}
}

// BenchmarkProcedureListREST is BenchmarkProcedureListGraphQL's page through
// GET /procedures?limit=50.
func BenchmarkProcedureListREST(b *testing.B) {
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) {
			h := newHarness(b, dialect, bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3})
			h.restList(b, 50)
			start := h.db.Statements()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.handler.ServeHTTP(rec, h.restRequest(50))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(h.db.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}

// BenchmarkProcedureListGraphQL serves the 50-procedure list page with every
// nested edge through the whole handler (auth, GraphQL, dataloaders) over a
// workspace of 10 000 procedures plus a noise workspace.
func BenchmarkProcedureListGraphQL(b *testing.B) {
	for _, dialect := range dbtest.Dialects(b) {
		b.Run(dialect, func(b *testing.B) {
			h := newHarness(b, dialect, bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3})
			h.list(b, 50)
			start := h.db.Statements()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.handler.ServeHTTP(rec, h.graphqlRequest(50))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(h.db.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}
