package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/proceduretally"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// checkTallies compares every stored tally of workspace ws with a COUNT.
func checkTallies(t *testing.T, db *database.DB, ws uuid.UUID) {
	t.Helper()
	sys := viewer.System(context.Background())
	tallies, err := db.Client.ProcedureTally.Query().Where(proceduretally.WorkspaceID(ws)).All(sys)
	if err != nil {
		t.Fatal(err)
	}
	global := 0
	for _, tl := range tallies {
		q := db.Client.Procedure.Query().Where(procedure.WorkspaceID(ws))
		parent := func(prefix string, where func(uuid.UUID) predicate.Procedure) bool {
			id, err := uuid.Parse(strings.TrimPrefix(tl.Key, prefix))
			if !strings.HasPrefix(tl.Key, prefix) || err != nil {
				return false
			}
			q.Where(where(id))
			return true
		}
		switch k := tl.Key; {
		case k == "all":
			global++
		case len(k) > 6 && k[:6] == "state:":
			global++
			q.Where(procedure.StateEQ(procedure.State(k[6:])))
		case len(k) > 9 && k[:9] == "priority:":
			global++
			q.Where(procedure.PriorityEQ(procedure.Priority(k[9:])))
		case parent("project:", procedure.ProjectID), parent("category:", procedure.CategoryID), parent("doer:", procedure.DoerID):
		default:
			t.Fatalf("unknown tally %q", k)
		}
		n, err := q.Count(sys)
		if err != nil {
			t.Fatal(err)
		}
		if int64(n) != tl.Count {
			t.Errorf("tally %s = %d, COUNT = %d", tl.Key, tl.Count, n)
		}
	}
	if global != 1+len(procedure.StateValues())+len(procedure.PriorityValues()) {
		t.Fatalf("%d global tally rows: %+v", global, tallies)
	}
	// Every parent of a procedure has its tally.
	for _, e := range []struct {
		prefix string
		column string
	}{{"project:", procedure.FieldProjectID}, {"category:", procedure.FieldCategoryID}, {"doer:", procedure.FieldDoerID}} {
		ids, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(ws), func(s *sql.Selector) { s.Where(sql.NotNull(s.C(e.column))) }).
			Unique(true).Select(e.column).Strings(sys)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if !slices.ContainsFunc(tallies, func(tl *ent.ProcedureTally) bool { return tl.Key == e.prefix+id }) {
				t.Errorf("no tally for %s%s", e.prefix, id)
			}
		}
	}
}

// TestTotalsStayExactUnderConcurrentWriters runs creates, updates, moves
// and deletes from several writers at once (the tallies are adjusted by
// each write under the workspace lock) while readers list through both
// faces, then compares every list's total, on both faces, and every tally
// with a fresh COUNT.
func TestTotalsStayExactUnderConcurrentWriters(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Busy", "BSY")
		ws := uuid.MustParse(w.ID)
		mctx := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws, MemberID: uuid.MustParse(w.MemberID), Role: viewer.RoleMember})
		states := procedure.StateValues()
		priorities := procedure.PriorityValues()
		const writers, opsEach = 4, 30
		var writing, reading sync.WaitGroup
		stop := make(chan struct{})
		errs := make(chan error, writers+2)
		for i := 0; i < writers; i++ {
			writing.Add(1)
			go func(seed uint64) {
				defer writing.Done()
				rng := rand.New(rand.NewPCG(seed, 99))
				var mine []string
				for op := 0; op < opsEach; op++ {
					var err error
					switch k := rng.IntN(10); {
					case k < 4 || len(mine) < 2:
						var created *ent.Procedure
						created, err = s.Service.CreateProcedure(mctx, core.CreateProcedureInput{
							Name: fmt.Sprintf("w%d-%d", seed, op), Priority: string(priorities[rng.IntN(len(priorities))]),
							State: string(states[rng.IntN(len(states))]), DueAt: ptr(time.Now()), ProjectID: w.ProjectID, CategoryID: w.CategoryID, DoerID: w.MemberID})
						if err == nil {
							mine = append(mine, created.ID.String())
						}
					case k < 7:
						st, pr := string(states[rng.IntN(len(states))]), string(priorities[rng.IntN(len(priorities))])
						_, err = s.Service.UpdateProcedure(mctx, mine[rng.IntN(len(mine))], core.UpdateProcedureInput{
							State: core.Some(st), Priority: core.Some(pr)})
					case k < 8:
						st := string(states[rng.IntN(len(states))])
						_, err = s.Service.MoveProcedure(mctx, mine[rng.IntN(len(mine))], &st, nil, nil)
					default:
						i := rng.IntN(len(mine))
						err = s.Service.DeleteProcedure(mctx, mine[i])
						mine = append(mine[:i], mine[i+1:]...)
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d op %d: %w", seed, op, err)
						return
					}
				}
			}(uint64(i + 1))
		}
		// Readers list through both faces while the writers run: every
		// answer must succeed.
		for _, face := range []string{"rest", "graphql"} {
			reading.Add(1)
			go func() {
				defer reading.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := listTotal(s, w.ViewToken, face, url.Values{"state": {"TODO"}}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		writing.Wait()
		close(stop)
		reading.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		checkTallies(t, db, ws)
		sys := viewer.System(context.Background())
		cases := []url.Values{{}}
		for _, st := range states {
			cases = append(cases, url.Values{"state": {string(st)}})
		}
		for _, pr := range priorities {
			cases = append(cases, url.Values{"priority": {string(pr)}})
		}
		cases = append(cases, url.Values{"state": {"TODO"}, "priority": {"HIGH"}}, url.Values{"projectId": {w.ProjectID}})
		for _, q := range cases {
			cq := db.Client.Procedure.Query().Where(procedure.WorkspaceID(ws))
			if q.Has("state") {
				cq.Where(procedure.StateEQ(procedure.State(q.Get("state"))))
			}
			if q.Has("priority") {
				cq.Where(procedure.PriorityEQ(procedure.Priority(q.Get("priority"))))
			}
			want, err := cq.Count(sys)
			if err != nil {
				t.Fatal(err)
			}
			for _, face := range []string{"rest", "graphql"} {
				got, err := listTotal(s, w.ViewToken, face, q)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s %v: total %d, COUNT %d", face, q, got, want)
				}
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// listTotal reads a procedure list's total through one face.
func listTotal(s *apitest.Server, token, face string, q url.Values) (int, error) {
	if face == "rest" {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/procedures?limit=1&"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var out struct{ Meta struct{ Total int } }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
			return 0, fmt.Errorf("GET /procedures?%s: %d", q.Encode(), resp.StatusCode)
		}
		return out.Meta.Total, nil
	}
	f := map[string]any{}
	for k := range q {
		f[k] = q.Get(k)
	}
	body, _ := json.Marshal(map[string]any{"query": `query($f: ProcedureFilter) { procedures(first: 1, filter: $f) { totalCount } }`,
		"variables": map[string]any{"f": f}})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   struct{ Procedures struct{ TotalCount int } }
		Errors []any
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Errors) > 0 {
		return 0, fmt.Errorf("graphql %v: %d %v", q, resp.StatusCode, out.Errors)
	}
	return out.Data.Procedures.TotalCount, nil
}

// TestTalliesAreRebuiltWhenMissing: a workspace without tally rows (one
// created before tallies, or a SQLite file upgraded in place) lists exact
// totals by counting, and its next write rebuilds the tallies exactly.
func TestTalliesAreRebuiltWhenMissing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Old", "OLD")
		ws := uuid.MustParse(w.ID)
		mctx := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws, MemberID: uuid.MustParse(w.MemberID), Role: viewer.RoleMember})
		create := func(state string) string {
			p, err := s.Service.CreateProcedure(mctx, core.CreateProcedureInput{Name: "p", Priority: "LOW", State: state,
				DueAt: ptr(time.Now()), ProjectID: w.ProjectID, CategoryID: w.CategoryID, DoerID: w.MemberID})
			if err != nil {
				t.Fatal(err)
			}
			return p.ID.String()
		}
		for _, st := range []string{"TODO", "TODO", "WAITING"} {
			create(st)
		}
		sys := viewer.System(context.Background())
		if _, err := db.Client.ProcedureTally.Delete().Where(proceduretally.WorkspaceID(ws)).Exec(sys); err != nil {
			t.Fatal(err)
		}
		if got, err := listTotal(s, w.ViewToken, "rest", url.Values{"state": {"TODO"}}); err != nil || got != 2 {
			t.Fatalf("TODO total without tallies: %d %v, want 2", got, err)
		}
		id := create("TODO")
		checkTallies(t, db, ws)
		if _, err := s.Service.UpdateProcedure(mctx, id, core.UpdateProcedureInput{State: core.Some("WAITING")}); err != nil {
			t.Fatal(err)
		}
		checkTallies(t, db, ws)
		for q, want := range map[string]int{"TODO": 2, "WAITING": 2} {
			if got, err := listTotal(s, w.ViewToken, "graphql", url.Values{"state": {q}}); err != nil || got != want {
				t.Fatalf("%s total: %d %v, want %d", q, got, err, want)
			}
		}
	})
}
