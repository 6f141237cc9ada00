package bench_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// The regression gate (docs/performance.md, "The cost gate"): what a
// request costs that does not depend on the machine — the SQL statements it
// issues and the allocations it makes — is pinned here for the list page on
// both faces, the dashboard, and every kind of write, on both databases.
// Time is left to the benchmarks and benchstat; these numbers do not move
// with load, so a change that adds a statement or a fifth more allocations
// fails CI with the figure, whatever else the machine is doing.

// allocSlack is how far allocations may drift from their pin before the
// gate fails, either way: a regression of 20 % always fails, and a pin left
// well above what a request now costs (an improvement not written down)
// fails too, since it would let a later regression through unseen.
const allocSlack = 0.10

// cost is a pinned request's statements and allocations, per request.
type cost struct {
	statements int64
	allocs     float64
}

// pins holds the costs, by dialect and request. Update a pin only with the
// reason in the commit: PROCSVC_COST_GATE=print prints the table as
// measured.
var pins = map[string]map[string]cost{
	"sqlite": {
		"REST list page":                  {3, 5030},
		"REST list page after a write":    {4, 5181},
		"GraphQL list page":               {3, 6195},
		"GraphQL list page after a write": {4, 6348},
		"dashboard":                       {4, 13478},
		"dashboard after a write":         {6, 14056},
		"REST create procedure":           {13, 2223},
		"REST update procedure":           {8, 1693},
		"REST delete procedure":           {8, 1569},
		"REST add comment":                {6, 1348},
		"REST create project":             {5, 884},
		"REST create category":            {5, 867},
		"GraphQL update procedure":        {8, 1886},
		"GraphQL create procedure":        {12, 2348},
	},
	"postgres": {
		"REST list page":                  {3, 4814},
		"REST list page after a write":    {4, 4965},
		"GraphQL list page":               {3, 5977},
		"GraphQL list page after a write": {4, 6131},
		"dashboard":                       {4, 15302},
		"dashboard after a write":         {6, 15912},
		"REST create procedure":           {13, 2353},
		"REST update procedure":           {8, 1699},
		"REST delete procedure":           {8, 1681},
		"REST add comment":                {6, 1420},
		"REST create project":             {5, 933},
		"REST create category":            {5, 915},
		"GraphQL update procedure":        {8, 1951},
		"GraphQL create procedure":        {12, 2519},
	},
}

// gateRequest is one pinned request: setup (not measured) prepares
// iteration i and returns the request to measure.
type gateRequest struct {
	name  string
	setup func(t *testing.T, g *gate, i int) *http.Request
	// want is the status the measured request must answer.
	want int
}

// gate is the seeded workspace the pinned requests run against, and the
// ids they name.
type gate struct {
	h                         *apitest.Lists
	category, member, project string
	procedures                []string // created by setups, for the edits
	dashboardShows            *priorityWriter
}

func TestRequestCostsArePinned(t *testing.T) {
	requests := []gateRequest{
		{"REST list page", func(t *testing.T, g *gate, i int) *http.Request { return g.h.RESTRequest(50) }, 200},
		{"REST list page after a write", func(t *testing.T, g *gate, i int) *http.Request {
			g.write(t, i)
			return g.h.RESTRequest(50)
		}, 200},
		{"GraphQL list page", func(t *testing.T, g *gate, i int) *http.Request {
			return g.h.GraphQLRequest(apitest.ListQuery, 50)
		}, 200},
		{"GraphQL list page after a write", func(t *testing.T, g *gate, i int) *http.Request {
			g.write(t, i)
			return g.h.GraphQLRequest(apitest.ListQuery, 50)
		}, 200},
		{"dashboard", func(t *testing.T, g *gate, i int) *http.Request { return dashboardRequest(g.h) }, 200},
		{"dashboard after a write", func(t *testing.T, g *gate, i int) *http.Request {
			g.write(t, i)
			return dashboardRequest(g.h)
		}, 200},
		{"REST create procedure", func(t *testing.T, g *gate, i int) *http.Request {
			return g.rest("POST", "/procedures", g.procedureBody(fmt.Sprintf("Gate %d", i)))
		}, 200},
		{"REST update procedure", func(t *testing.T, g *gate, i int) *http.Request {
			return g.rest("PUT", "/procedures/"+g.procedure(t, i), map[string]any{"name": fmt.Sprintf("Gate renamed %d", i), "priority": "HIGH"})
		}, 200},
		{"REST delete procedure", func(t *testing.T, g *gate, i int) *http.Request {
			return g.rest("DELETE", "/procedures/"+g.newProcedure(t, i), nil)
		}, 200},
		{"REST add comment", func(t *testing.T, g *gate, i int) *http.Request {
			return g.rest("POST", "/procedures/"+g.procedure(t, i)+"/comments", map[string]any{"text": fmt.Sprintf("Gate comment %d", i)})
		}, 200},
		{"REST create project", func(t *testing.T, g *gate, i int) *http.Request {
			return g.rest("POST", "/projects", map[string]any{"name": fmt.Sprintf("Gate project %d", i)})
		}, 200},
		{"REST create category", func(t *testing.T, g *gate, i int) *http.Request {
			return g.rest("POST", "/categories", map[string]any{"name": fmt.Sprintf("Gate category %d", i)})
		}, 200},
		{"GraphQL update procedure", func(t *testing.T, g *gate, i int) *http.Request {
			return g.graphQL(`mutation U($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { id priority doer { name } } }`,
				map[string]any{"id": g.procedure(t, i), "in": map[string]any{"priority": rotation[i%len(rotation)]}})
		}, 200},
		{"GraphQL create procedure", func(t *testing.T, g *gate, i int) *http.Request {
			return g.graphQL(`mutation C($in: CreateProcedureInput!) { createProcedure(input: $in) { id shortId category { name } } }`,
				map[string]any{"in": g.procedureBody(fmt.Sprintf("Gate GraphQL %d", i))})
		}, 200},
	}
	printing := os.Getenv("PROCSVC_COST_GATE") == "print"
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			g := newGate(t, dialect)
			measured := map[string]cost{}
			for _, r := range requests {
				t.Run(strings.ReplaceAll(r.name, " ", "_"), func(t *testing.T) {
					got := measure(t, g, r)
					measured[r.name] = got
					pin, ok := pins[dialect][r.name]
					if !ok {
						t.Fatalf("no pin for %q on %s: measured %d statements, %.0f allocs", r.name, dialect, got.statements, got.allocs)
					}
					if printing {
						return
					}
					if got.statements != pin.statements {
						t.Errorf("%s on %s: %d SQL statements per request, pinned at %d", r.name, dialect, got.statements, pin.statements)
					}
					if raceEnabled {
						return // the race detector's instrumentation allocates
					}
					if lo, hi := pin.allocs*(1-allocSlack), pin.allocs*(1+allocSlack); got.allocs < lo || got.allocs > hi {
						t.Errorf("%s on %s: %.0f allocations per request, pinned at %.0f (±%.0f %%): %+.1f %%",
							r.name, dialect, got.allocs, pin.allocs, allocSlack*100, (got.allocs/pin.allocs-1)*100)
					}
				})
			}
			if printing {
				var b strings.Builder
				fmt.Fprintf(&b, "\t%q: {\n", dialect)
				for _, r := range requests {
					fmt.Fprintf(&b, "\t\t%-36s {%d, %.0f},\n", fmt.Sprintf("%q:", r.name), measured[r.name].statements, measured[r.name].allocs)
				}
				b.WriteString("\t},\n")
				t.Log("measured:\n" + b.String())
			}
		})
	}
}

// gateRuns is how many times each request is measured; the median is kept,
// so that a collection of a sync.Pool or a map's growth in one run does not
// decide the figure.
const gateRuns = 15

// measure runs r gateRuns times (after two unmeasured runs that warm what a
// steady state has warm) and returns the median statements and allocations.
func measure(t *testing.T, g *gate, r gateRequest) cost {
	var statements []int64
	var allocs []float64
	var ms runtime.MemStats
	for i := range gateRuns + 2 {
		req := r.setup(t, g, i)
		rec := httptest.NewRecorder()
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		before := g.h.DB.Statements()
		g.h.Handler.ServeHTTP(rec, req)
		n := g.h.DB.Statements() - before
		runtime.ReadMemStats(&ms)
		if rec.Code != r.want || strings.HasPrefix(rec.Body.String(), `{"errors"`) || rec.Header().Get("X-Cache") != "" {
			t.Fatalf("%s: status %d (want %d), X-Cache %q: %.500s", r.name, rec.Code, r.want, rec.Header().Get("X-Cache"), rec.Body.String())
		}
		if i < 2 {
			continue
		}
		statements = append(statements, n)
		allocs = append(allocs, float64(ms.Mallocs-mallocs))
	}
	slices.Sort(statements)
	slices.Sort(allocs)
	return cost{statements[len(statements)/2], allocs[len(allocs)/2]}
}

func newGate(t *testing.T, dialect string) *gate {
	// The list benchmarks' shape, smaller: 20 projects fill the dashboard.
	h := apitest.NewLists(t, dialect, bench.Shape{Procedures: 2_000, Projects: 20, Categories: 10, Members: 10, MaxComments: 3},
		server.Deps{ResponseCacheBytes: 0})
	g := &gate{h: h}
	list, _ := h.RESTList(t, 1)
	if len(list.Data) == 0 || list.Data[0].Category == nil || list.Data[0].Doer == nil || list.Data[0].Project == nil {
		t.Fatalf("the seeded list's first procedure lacks an edge: %+v", list.Data)
	}
	g.category, g.member, g.project = list.Data[0].Category.ID, list.Data[0].Doer.ID, list.Data[0].Project.ID
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, dashboardRequest(h))
	if rec.Code != http.StatusOK {
		t.Fatalf("dashboard: %d %s", rec.Code, rec.Body.String())
	}
	g.dashboardShows = newPriorityWriter(t, rec.Body.Bytes())
	return g
}

func (g *gate) procedureBody(name string) map[string]any {
	return map[string]any{"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-02T03:04:05.678Z",
		"categoryId": g.category, "doerId": g.member, "projectId": g.project}
}

// newProcedure creates a procedure (not measured) and returns its id.
func (g *gate) newProcedure(t *testing.T, i int) string {
	rec := httptest.NewRecorder()
	g.h.Handler.ServeHTTP(rec, g.rest("POST", "/procedures", g.procedureBody(fmt.Sprintf("Gate setup %d", i))))
	var out struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || out.ID == "" {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	return out.ID
}

// procedure returns a procedure the edits take in turn, created once.
func (g *gate) procedure(t *testing.T, i int) string {
	for len(g.procedures) < 4 {
		g.procedures = append(g.procedures, g.newProcedure(t, len(g.procedures)))
	}
	return g.procedures[i%len(g.procedures)]
}

// write changes the priority of a procedure the dashboard shows (not
// measured), so that the read after it finds the workspace's version moved.
func (g *gate) write(t *testing.T, i int) { g.dashboardShows.write(t, g.h, i) }

func (g *gate) rest(method, path string, body any) *http.Request {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+g.h.Token)
	return req
}

func (g *gate) graphQL(query string, variables map[string]any) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": variables})
	return graphQLPost(g.h, body)
}
