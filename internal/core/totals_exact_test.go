package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// filterCase is one list filter, as REST parameters and as the predicates of
// a fresh COUNT.
type filterCase struct {
	name  string
	rest  url.Values
	preds []predicate.Procedure
}

// TestTotalsStayExact interleaves random creates, updates, moves, comments,
// category deletes and procedure deletes with list requests under every
// filter, through both faces with the caches on as in production, and
// compares every total with a fresh COUNT.
func TestTotalsStayExact(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Totals", "TOT")
		other := s.NewWorkspace(t, "Other", "OTH") // its writes must not move our totals
		ws := uuid.MustParse(w.ID)
		actx := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws, MemberID: uuid.MustParse(w.AdminID), Role: viewer.RoleAdmin})
		projects := []string{w.ProjectID}
		categories := []string{w.CategoryID}
		for i := 0; i < 2; i++ {
			p, err := s.Service.CreateProject(actx, core.ProjectInput{Name: core.Some(fmt.Sprintf("P%d", i))})
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.Service.CreateCategory(actx, fmt.Sprintf("C%d", i))
			if err != nil {
				t.Fatal(err)
			}
			projects, categories = append(projects, p.ID.String()), append(categories, c.ID.String())
		}
		members := []string{w.AdminID, w.MemberID}
		states := []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}
		priorities := []string{"LOW", "MEDIUM", "HIGH"}
		words := []string{"alpha", "Bravo", "charlie", "DELTA"}
		rng := rand.New(rand.NewPCG(11, 12))
		pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var ids []string

		filters := func() []filterCase {
			from, to := base.AddDate(0, 0, 10), base.AddDate(0, 0, 40)
			fs := []filterCase{{name: "all"}}
			for _, c := range categories {
				id := uuid.MustParse(c)
				fs = append(fs, filterCase{"category", url.Values{"categoryId": {c}}, []predicate.Procedure{procedure.CategoryID(id)}})
			}
			for _, m := range members {
				id := uuid.MustParse(m)
				fs = append(fs, filterCase{"doer", url.Values{"doerId": {m}}, []predicate.Procedure{procedure.DoerID(id)}})
			}
			for _, p := range projects {
				id := uuid.MustParse(p)
				fs = append(fs, filterCase{"project", url.Values{"projectId": {p}}, []predicate.Procedure{procedure.ProjectID(id)}})
			}
			for _, st := range states {
				fs = append(fs, filterCase{"state", url.Values{"state": {st}}, []predicate.Procedure{procedure.StateEQ(procedure.State(st))}})
			}
			for _, pr := range priorities {
				fs = append(fs, filterCase{"priority", url.Values{"priority": {pr}}, []predicate.Procedure{procedure.PriorityEQ(procedure.Priority(pr))}})
			}
			for _, word := range words {
				q := strings.ToLower(word)
				fs = append(fs, filterCase{"search", url.Values{"search": {q}}, []predicate.Procedure{procedure.Or(
					procedure.NameContainsFold(q), procedure.ContentContainsFold(q), procedure.ShortIDContainsFold(q))}})
			}
			fs = append(fs, filterCase{"dueWindow", url.Values{"startedAt": {from.Format(time.RFC3339)}, "dueAt": {to.Format(time.RFC3339)}},
				[]predicate.Procedure{procedure.DueAtGTE(from), procedure.DueAtLTE(to)}})
			fs = append(fs, filterCase{"combined", url.Values{"state": {"TODO"}, "priority": {"HIGH"}, "search": {"a"}},
				[]predicate.Procedure{procedure.StateEQ("TODO"), procedure.PriorityEQ("HIGH"), procedure.Or(
					procedure.NameContainsFold("a"), procedure.ContentContainsFold("a"), procedure.ShortIDContainsFold("a"))}})
			return fs
		}

		create := func(token string, wsRefs *apitest.Workspace) string {
			in := map[string]any{"name": pick(words) + " " + pick(words), "priority": pick(priorities), "state": pick(states),
				"dueAt": base.AddDate(0, 0, rng.IntN(60)).Format(time.RFC3339), "content": pick(words),
				"categoryId": pick(categories), "doerId": pick(members), "projectId": pick(projects)}
			if wsRefs != nil {
				in["categoryId"], in["doerId"], in["projectId"] = wsRefs.CategoryID, wsRefs.MemberID, wsRefs.ProjectID
			}
			var out struct{ CreateProcedure struct{ ID string } }
			s.GraphQL(t, token, `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, map[string]any{"in": in}).Decode(t, &out)
			return out.CreateProcedure.ID
		}
		mutate := func(step int) string {
			switch op := rng.IntN(10); {
			case op < 3 || len(ids) < 3:
				ids = append(ids, create(w.MemberToken, nil))
				return "create"
			case op < 5:
				id := ids[rng.IntN(len(ids))]
				in := map[string]any{"state": pick(states), "priority": pick(priorities), "name": pick(words)}
				if rng.IntN(3) == 0 {
					in["categoryId"] = nil
				} else {
					in["categoryId"] = pick(categories)
				}
				in["doerId"], in["projectId"] = pick(members), pick(projects)
				s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { id } }`,
					map[string]any{"id": id, "in": in}).Decode(t, &struct{}{})
				return "update"
			case op < 6:
				id := ids[rng.IntN(len(ids))]
				s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $s: ProcedureState) { moveProcedure(id: $id, state: $s) { id } }`,
					map[string]any{"id": id, "s": pick(states)}).Decode(t, &struct{}{})
				return "move"
			case op < 7:
				s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { addComment(input: {procedureId: $id, text: "x"}) { id } }`,
					map[string]any{"id": ids[rng.IntN(len(ids))]}).Decode(t, &struct{}{})
				return "comment"
			case op < 8:
				create(other.MemberToken, other)
				return "other-workspace create"
			case op < 9 && step%25 == 0 && len(categories) > 1:
				i := rng.IntN(len(categories))
				req, _ := http.NewRequest(http.MethodDelete, s.URL+"/categories/"+categories[i], nil)
				req.Header.Set("Authorization", "Bearer "+w.MemberToken)
				resp, err := s.HTTP.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("delete category: %v %v", err, resp)
				}
				resp.Body.Close()
				categories = append(categories[:i], categories[i+1:]...)
				return "delete category"
			default:
				i := rng.IntN(len(ids))
				s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`,
					map[string]any{"id": ids[i]}).Decode(t, &struct{}{})
				ids = append(ids[:i], ids[i+1:]...)
				return "delete"
			}
		}
		restTotal := func(q url.Values) int {
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/procedures?"+q.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+w.ViewToken)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct{ Meta struct{ Total int } }
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
				t.Fatalf("GET /procedures?%s: %d", q.Encode(), resp.StatusCode)
			}
			return out.Meta.Total
		}
		gqlTotal := func(q url.Values) int {
			f := map[string]any{}
			for k, v := range map[string]string{"categoryId": "categoryId", "doerId": "doerId", "projectId": "projectId",
				"state": "state", "priority": "priority", "search": "search", "startedAt": "dueFrom", "dueAt": "dueTo"} {
				if q.Has(k) {
					f[v] = q.Get(k)
				}
			}
			var out struct{ Procedures struct{ TotalCount int } }
			s.GraphQL(t, w.ViewToken, `query($f: ProcedureFilter) { procedures(first: 1, filter: $f) { totalCount } }`,
				map[string]any{"f": f}).Decode(t, &out)
			return out.Procedures.TotalCount
		}
		sys := viewer.System(context.Background())
		checks := 0
		for step := 0; step < 150; step++ {
			op := mutate(step)
			fs := filters()
			// Every filter after some writes; a few random ones after each.
			sample := fs
			if step%10 != 0 {
				sample = []filterCase{fs[rng.IntN(len(fs))], fs[rng.IntN(len(fs))], fs[0]}
			}
			for _, f := range sample {
				want, err := db.Client.Procedure.Query().Where(append(f.preds, procedure.WorkspaceID(ws))...).Count(sys)
				if err != nil {
					t.Fatal(err)
				}
				// Twice each: the second read is served from the caches.
				for round := 0; round < 2; round++ {
					if got := restTotal(f.rest); got != want {
						t.Fatalf("step %d after %s: REST %s %v: total %d, COUNT %d", step, op, f.name, f.rest, got, want)
					}
					if got := gqlTotal(f.rest); got != want {
						t.Fatalf("step %d after %s: GraphQL %s %v: totalCount %d, COUNT %d", step, op, f.name, f.rest, got, want)
					}
					checks += 2
				}
			}
		}
		t.Logf("%d totals compared with COUNT", checks)
	})
}
