package loader_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// The no-N+1 guard of nested connections (docs/api.md, "Nested
// connections"): a level of nesting costs the same statements whatever the
// number of parents and children, so the "project dashboard" costs
// one constant.

// DashboardQuery is the project dashboard: every project's newest
// 10 procedures with their edges and total, each with its oldest 5
// comments and their total. At 20 projects its complexity is 1 + 20 × (1 +
// 1 + 10 × (1 + 3 + 1 + 5)) = 2 041.
const DashboardQuery = `query Dashboard($first: Int!) {
  projects(first: $first) {
    nodes {
      id name
      procedures(first: 10) {
        totalCount
        nodes {
          id name category { name } doer { name } project { name }
          comments(first: 5) { totalCount nodes { text } }
        }
      }
    }
  }
}`

// DashboardAuthorsQuery is the dashboard showing the comments' authors
// too: 1 + n × (1 + 1 + 10 × (1 + 3 + 1 + 5 × 2)) = 1 + 152 n, within the
// limit of 2 500 up to 16 projects (20 would cost 3 041).
const DashboardAuthorsQuery = `query DashboardAuthors($first: Int!) {
  projects(first: $first) {
    nodes {
      id name
      procedures(first: 10) {
        totalCount
        nodes {
          id name category { name } doer { name } project { name }
          comments(first: 5) { totalCount nodes { text author { name } } }
        }
      }
    }
  }
}`

// DoersQuery lists procedures with, under each, its doer's 3 newest
// assigned procedures and their total: the doers are announced by the list.
const DoersQuery = `query Doers($first: Int!) {
  procedures(first: $first) {
    nodes { id doer { id assignedProcedures(first: 3) { totalCount nodes { id } } } }
  }
}`

// The statements of the dashboard: steady (the version's totals and
// shared edges read), the token, the projects' page, every project's
// procedures (one UNION ALL of a read per project) and their comments (one
// windowed read, authors among the shared members); right after a write,
// also the projects' count, the procedures' totals (one count grouped by
// project) and the categories, members and projects (one read).
const (
	DashboardStatements     = 4
	DashboardStatementsCold = 7
)

// The statements of DoersQuery: steady, the token, the page, and every
// doer's list (one UNION ALL); right after a write, also the page's total
// (a tally), the doers (shared members) and their totals (one count
// grouped by doer).
const (
	DoersStatements           = 3
	DoersStatementsAfterWrite = 6
)

type dashboard struct {
	Data struct {
		Projects struct {
			Nodes []struct {
				ID         string
				Name       string
				Procedures struct {
					TotalCount int
					Nodes      []struct {
						ID, Name string
						Category *struct{ Name string }
						Doer     *struct{ Name string }
						Project  *struct{ Name string }
						Comments struct {
							TotalCount int
							Nodes      []struct {
								Text   string
								Author *struct{ Name string }
							}
						}
					}
				}
			}
		}
		Procedures struct {
			Nodes []struct {
				ID   string
				Doer *struct {
					ID                 string
					AssignedProcedures struct {
						TotalCount int
						Nodes      []struct{ ID string }
					}
				}
			}
		}
	}
	Errors []json.RawMessage
}

// sent is the start of each statement the last serve sent (outside
// transactions), for failure messages.
var sent struct {
	sync.Mutex
	list []string
}

// serve sends query with $first to l and returns the answer and the
// statements it cost; it fails t on any error.
func serve(t *testing.T, l *apitest.Lists, query string, first int) (dashboard, int64) {
	t.Helper()
	sent.Lock()
	sent.list = nil
	sent.Unlock()
	l.DB.Record(func(s database.Statement) {
		sent.Lock()
		defer sent.Unlock()
		sent.list = append(sent.list, s.Query[:min(len(s.Query), 90)])
	})
	defer l.DB.Record(nil)
	before := l.DB.Statements()
	rec := httptest.NewRecorder()
	l.Handler.ServeHTTP(rec, l.GraphQLRequest(query, first))
	n := l.DB.Statements() - before
	var out dashboard
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	return out, n
}

func sentList() []string {
	sent.Lock()
	defer sent.Unlock()
	return append([]string(nil), sent.list...)
}

// count runs a COUNT with ? placeholders on l's database, past every cache.
func count(t *testing.T, l *apitest.Lists, query string, args ...any) int {
	t.Helper()
	if l.DB.Dialect == "postgres" {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", "$"+strconv.Itoa(i), 1)
		}
	}
	var n int
	if err := l.DB.SQL.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// bumpVersions makes every total of every workspace stale, as a write does.
func bumpVersions(t *testing.T, l *apitest.Lists) {
	t.Helper()
	if _, err := l.DB.SQL.ExecContext(context.Background(), "UPDATE workspaces SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
}

// checkDashboard compares every total of a dashboard with the database's
// COUNT and every page with its size.
func checkDashboard(t *testing.T, l *apitest.Lists, d dashboard, projects int, authors bool) {
	t.Helper()
	if got := len(d.Data.Projects.Nodes); got != projects {
		t.Fatalf("%d projects, want %d", got, projects)
	}
	comments := 0
	for _, p := range d.Data.Projects.Nodes {
		want := count(t, l, "SELECT COUNT(*) FROM procedures WHERE project_id = ?", p.ID)
		if p.Procedures.TotalCount != want || len(p.Procedures.Nodes) != min(10, want) {
			t.Fatalf("project %s: total %d, %d nodes; COUNT %d", p.Name, p.Procedures.TotalCount, len(p.Procedures.Nodes), want)
		}
		for _, n := range p.Procedures.Nodes {
			if n.Category == nil || n.Doer == nil || n.Project == nil || n.Project.Name != p.Name {
				t.Fatalf("procedure %s is missing an edge", n.ID)
			}
			want := count(t, l, "SELECT COUNT(*) FROM comments WHERE procedure_id = ?", n.ID)
			if n.Comments.TotalCount != want || len(n.Comments.Nodes) != min(5, want) {
				t.Fatalf("procedure %s: %d comments of %d; COUNT %d", n.ID, len(n.Comments.Nodes), n.Comments.TotalCount, want)
			}
			for _, c := range n.Comments.Nodes {
				if authors && (c.Author == nil || c.Author.Name == "") {
					t.Fatalf("comment %q has no author", c.Text)
				}
			}
			comments += len(n.Comments.Nodes)
		}
	}
	if comments == 0 {
		t.Fatalf("no comments shown: the comments level went untested")
	}
}

// TestDashboardStatementCount: the project dashboard over 3 projects of 2
// procedures costs exactly what it costs over 20 projects of about 12 (most
// a full page of 10) with up to 8 comments apiece, steady and right after a
// write, with and without the comments' authors, on both databases.
func TestDashboardStatementCount(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			shapes := []struct {
				name  string
				shape bench.Shape
			}{
				{"Small", bench.Shape{Procedures: 6, Projects: 3, Categories: 2, Members: 3, MaxComments: 2}},
				{"Large", bench.Shape{Procedures: 240, Projects: 20, Categories: 6, Members: 8, MaxComments: 8}},
			}
			queries := []struct {
				name, query string
				first       int
			}{{"Dashboard", DashboardQuery, 20}, {"WithAuthors", DashboardAuthorsQuery, 16}}
			steady, cold := map[string]int64{}, map[string]int64{}
			for _, sh := range shapes {
				l := apitest.NewLists(t, dialect, sh.shape, server.Deps{})
				if sh.name == "Large" {
					full := count(t, l, "SELECT COUNT(*) FROM (SELECT project_id FROM procedures GROUP BY project_id HAVING COUNT(*) > 10) AS f")
					if full < 10 {
						t.Fatalf("test data: only %d projects fill a page of 10", full)
					}
				}
				for _, q := range queries {
					key := sh.name + "/" + q.name
					// The first use of the token records lastUsedAt (a
					// write); the second fills the totals of that version.
					serve(t, l, q.query, q.first)
					serve(t, l, q.query, q.first)
					d, n := serve(t, l, q.query, q.first)
					checkDashboard(t, l, d, min(q.first, sh.shape.Projects), q.name == "WithAuthors")
					steady[key] = n
					bumpVersions(t, l)
					d, n = serve(t, l, q.query, q.first)
					checkDashboard(t, l, d, min(q.first, sh.shape.Projects), q.name == "WithAuthors")
					cold[key] = n
					t.Logf("%s %s: %s costs %d statements steady, %d after a write", dialect, sh.name, q.name, steady[key], cold[key])
				}
			}
			for key, n := range steady {
				if n != DashboardStatements || cold[key] != DashboardStatementsCold {
					t.Fatalf("%s: %d statements steady, %d after a write; want %d and %d (all: steady %v, after a write %v)",
						key, n, cold[key], DashboardStatements, DashboardStatementsCold, steady, cold)
				}
			}
		})
	}
}

// TestDoersStatementCount: a page of procedures showing each doer's
// assigned procedures costs the same for 10 procedures as for 100 (a dozen
// doers), steady and right after a write: the list announces the doers, so
// their lists are read at once.
func TestDoersStatementCount(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			l := apitest.NewLists(t, dialect, bench.Shape{Procedures: 300, Projects: 7, Categories: 5, Members: 12, MaxComments: 1}, server.Deps{})
			for _, first := range []int{10, 100} {
				// Steady: the page's doers, their totals and the list's
				// total read once for this version.
				serve(t, l, DoersQuery, first)
				serve(t, l, DoersQuery, first)
				for _, cold := range []bool{false, true} {
					want := int64(DoersStatements)
					if cold {
						bumpVersions(t, l)
						want = DoersStatementsAfterWrite
					}
					d, n := serve(t, l, DoersQuery, first)
					t.Logf("%s: %d procedures with their doers' lists cost %d statements (after a write: %v)", dialect, first, n, cold)
					if got := len(d.Data.Procedures.Nodes); got != first {
						t.Fatalf("%d procedures", got)
					}
					doers := map[string]bool{}
					for _, p := range d.Data.Procedures.Nodes {
						if p.Doer == nil {
							t.Fatalf("procedure %s has no doer", p.ID)
						}
						a := p.Doer.AssignedProcedures
						if want := count(t, l, "SELECT COUNT(*) FROM procedures WHERE doer_id = ?", p.Doer.ID); a.TotalCount != want || len(a.Nodes) != min(3, want) {
							t.Fatalf("doer %s: total %d, %d nodes; COUNT %d", p.Doer.ID, a.TotalCount, len(a.Nodes), want)
						}
						doers[p.Doer.ID] = true
					}
					if first == 100 && len(doers) < 10 {
						t.Fatalf("only %d doers: the test needs many parents", len(doers))
					}
					if n != want {
						t.Fatalf("first %d (after a write: %v): %d statements, want %d: %q", first, cold, n, want, sentList())
					}
				}
			}
		})
	}
}
