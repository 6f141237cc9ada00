package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// A cached response survives the writes that leave its footprint alone
// (internal/respcache, core.Footprint). These tests hold that to the only
// standard that matters: after every kind of write, every read shape served
// by the cached handler is byte-for-byte what a handler without a cache
// computes from the database at that moment.

// footprintRig is one workspace served twice over one database: cached (as
// in production, its hub fed by the writes' announcements) and uncached.
type footprintRig struct {
	cached, fresh string
	token         string
	ctx           context.Context // acts as the workspace's admin
	svc           *core.Service
	ws            *apitest.Workspace
	projects      []string
	categories    []string
	members       []string
	procedures    []string
}

func newFootprintRig(t *testing.T, db *database.DB) *footprintRig {
	t.Helper()
	srv := apitest.Start(t, db)
	ws := srv.NewWorkspace(t, "Footprint", "FPT")
	fresh := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: srv.Service,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(fresh.Close)
	ctx, err := srv.Service.ActAsAdmin(context.Background(), ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := &footprintRig{cached: srv.URL, fresh: fresh.URL, token: ws.AdminToken, ctx: ctx, svc: srv.Service, ws: ws,
		projects: []string{ws.ProjectID}, categories: []string{ws.CategoryID}, members: []string{ws.AdminID, ws.MemberID}}
	p, err := srv.Service.CreateProject(ctx, core.ProjectInput{Name: core.Some("Another project")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := srv.Service.CreateCategory(ctx, "Another category")
	if err != nil {
		t.Fatal(err)
	}
	r.projects, r.categories = append(r.projects, p.ID.String()), append(r.categories, c.ID.String())
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 24 {
		r.create(t, rng, fmt.Sprintf("Procedure %02d", i))
	}
	return r
}

var (
	footprintStates     = []string{"TODO", "IN_PROGRESS", "WAITING", "COMPLETED"}
	footprintPriorities = []string{"LOW", "MEDIUM", "HIGH"}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (r *footprintRig) create(t *testing.T, rng *rand.Rand, name string) {
	t.Helper()
	due := time.Date(2026, 12, 1+rng.IntN(20), 0, 0, 0, 0, time.UTC)
	p, err := r.svc.CreateProcedure(r.ctx, core.CreateProcedureInput{Name: name, Priority: pick(rng, footprintPriorities),
		State: pick(rng, footprintStates), DueAt: &due, CategoryID: pick(rng, r.categories), DoerID: pick(rng, r.members),
		ProjectID: pick(rng, r.projects), Content: "about " + name})
	if err != nil {
		t.Fatal(err)
	}
	r.procedures = append(r.procedures, p.ID.String())
}

// shapes are the reads compared: REST lists and records, GraphQL queries
// with every edge (footprinted), and one that is not (viewer as well).
func (r *footprintRig) shapes() []footprintRead {
	const edges = `id shortId name priority state content position dueAt updatedAt categoryId doerId projectId
		category { id name } doer { id name email } project { id name } comments(last: 10) { nodes { id text author { name } } }`
	var out []footprintRead
	lists := []string{"", "&page=2", "&state=IN_PROGRESS", "&state=COMPLETED", "&priority=HIGH", "&priority=LOW",
		"&sortBy=dueAt&sortOrder=asc", "&sortBy=name", "&sortBy=project.name&sortOrder=asc", "&search=Procedure 1",
		"&projectId=" + r.projects[1], "&categoryId=" + r.categories[0] + "&state=TODO", "&doerId=" + r.members[1],
		"&startedAt=2026-12-05T00:00:00Z&dueAt=2026-12-12T00:00:00Z", "&priority=MEDIUM&sortBy=dueAt"}
	for _, q := range lists {
		out = append(out, footprintRead{name: "REST list" + q, path: "/procedures?limit=6" + q})
	}
	for _, i := range shownProcedures {
		out = append(out, footprintRead{name: fmt.Sprintf("REST procedure %d", i), path: "/procedures/" + r.procedures[i]},
			footprintRead{name: fmt.Sprintf("REST comments of %d", i), path: "/procedures/" + r.procedures[i] + "/comments?limit=2"})
	}
	out = append(out, footprintRead{name: "REST comments, page 2", path: "/procedures/" + r.procedures[shownProcedures[0]] + "/comments?limit=2&page=2"})
	gql := []struct {
		name, query string
		vars        map[string]any
	}{
		{"GraphQL list", `query($f: ProcedureFilter) { procedures(first: 6, filter: $f) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ` + edges + ` } } } }`, nil},
		{"GraphQL IN_PROGRESS", `query($f: ProcedureFilter) { procedures(first: 6, filter: $f) { totalCount nodes { ` + edges + ` } } }`,
			map[string]any{"f": map[string]any{"state": "IN_PROGRESS"}}},
		{"GraphQL by name", `query { procedures(first: 6, orderBy: {field: NAME, direction: ASC}) { totalCount nodes { ...P } } } fragment P on Procedure { ` + edges + ` }`, nil},
		{"GraphQL procedure", `query($id: ID!) { procedure(id: $id) { ... on Procedure { ` + edges + ` } } }`,
			map[string]any{"id": r.procedures[3]}},
		{"GraphQL with viewer", `query { viewer { id name } procedures(first: 3) { totalCount nodes { id name doer { name } } } }`, nil},
	}
	for _, g := range gql {
		body, _ := json.Marshal(map[string]any{"query": g.query, "variables": g.vars})
		out = append(out, footprintRead{name: g.name, path: "/graphql", body: body})
	}
	return out
}

// shownProcedures are the indexes of r.procedures the REST shapes read one
// by one (the delete write spares them).
var shownProcedures = []int{0, 5, 11}

// newestComment returns the id of the newest comment of a procedure the
// shapes show, "" when none has one.
func (r *footprintRig) newestComment(t *testing.T, rng *rand.Rand) string {
	t.Helper()
	for _, k := range rng.Perm(len(shownProcedures)) {
		p, err := r.svc.Procedure(r.ctx, r.procedures[shownProcedures[k]])
		if err != nil {
			t.Fatal(err)
		}
		last := 1
		list, err := r.svc.ProcedureComments(r.ctx, p.ID, core.Window{Last: &last})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			return list.Items[0].ID.String()
		}
	}
	return ""
}

type footprintRead struct {
	name, path string
	body       []byte // POST /graphql when set
}

// read answers one shape from base: status, body and X-Cache.
func (r *footprintRig) read(t *testing.T, base string, s footprintRead) (int, string, string) {
	t.Helper()
	method, body := http.MethodGet, io.Reader(nil)
	if s.body != nil {
		method, body = http.MethodPost, bytes.NewReader(s.body)
	}
	u := base + s.path
	if s.body == nil {
		if i := strings.IndexByte(s.path, '?'); i >= 0 {
			q, err := url.ParseQuery(s.path[i+1:])
			if err != nil {
				t.Fatal(err)
			}
			u = base + s.path[:i] + "?" + q.Encode()
		}
	}
	req, _ := http.NewRequest(method, u, body)
	req.Header.Set("Authorization", "Bearer "+r.token)
	if s.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("X-Cache")
}

// compare reads every shape from both handlers and fails on any difference;
// it returns how many cached answers were hits.
func (r *footprintRig) compare(t *testing.T, after string) (hits int) {
	t.Helper()
	for _, s := range r.shapes() {
		status, cached, how := r.read(t, r.cached, s)
		freshStatus, fresh, _ := r.read(t, r.fresh, s)
		if status != http.StatusOK || freshStatus != http.StatusOK {
			t.Fatalf("after %s, %s: status %d cached, %d fresh: %s", after, s.name, status, freshStatus, cached)
		}
		if cached != fresh {
			t.Fatalf("after %s, %s (X-Cache %q) is stale:\ncached %s\nfresh  %s", after, s.name, how, cached, fresh)
		}
		if how == "hit" {
			hits++
		}
	}
	return hits
}

// TestCachedReadsMatchFreshUnderWrites runs every kind of write, with
// random targets and values, and after each compares every read shape.
func TestCachedReadsMatchFreshUnderWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		r := newFootprintRig(t, db)
		rng := rand.New(rand.NewPCG(1, 2))
		r.compare(t, "nothing")
		type write struct {
			name string
			do   func() error
		}
		some := func() string { return pick(rng, r.procedures) }
		writes := []write{
			{"priority", func() error {
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{Priority: core.Some(pick(rng, footprintPriorities))})
				return err
			}},
			{"state", func() error {
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{State: core.Some(pick(rng, footprintStates))})
				return err
			}},
			{"name", func() error {
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{Name: core.Some(fmt.Sprintf("Procedure %02d", rng.IntN(40)))})
				return err
			}},
			{"content", func() error {
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{Content: core.Some(fmt.Sprintf("Procedure 1%d text", rng.IntN(9)))})
				return err
			}},
			{"dueAt", func() error {
				due := time.Date(2026, 12, 1+rng.IntN(20), rng.IntN(24), 0, 0, 0, time.UTC)
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{DueAt: core.Some(due)})
				return err
			}},
			{"category", func() error {
				in := core.UpdateProcedureInput{CategoryID: core.Some(pick(rng, r.categories))}
				if rng.IntN(3) == 0 {
					in.CategoryID = core.Null[string]()
				}
				_, err := r.svc.UpdateProcedure(r.ctx, some(), in)
				return err
			}},
			{"doer", func() error {
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{DoerID: core.Some(pick(rng, r.members))})
				return err
			}},
			{"project", func() error {
				_, err := r.svc.UpdateProcedure(r.ctx, some(), core.UpdateProcedureInput{ProjectID: core.Some(pick(rng, r.projects))})
				return err
			}},
			{"move", func() error {
				state := pick(rng, footprintStates)
				_, err := r.svc.MoveProcedure(r.ctx, some(), &state, nil, nil)
				return err
			}},
			{"comment", func() error {
				_, err := r.svc.AddComment(r.ctx, some(), "a comment")
				return err
			}},
			{"comment a shown procedure", func() error {
				_, err := r.svc.AddComment(r.ctx, r.procedures[pick(rng, shownProcedures)], "a comment shown")
				return err
			}},
			{"comment edit", func() error {
				if id := r.newestComment(t, rng); id != "" {
					_, err := r.svc.UpdateComment(r.ctx, id, fmt.Sprintf("edited %d", rng.IntN(100)))
					return err
				}
				return nil
			}},
			{"comment delete", func() error {
				if id := r.newestComment(t, rng); id != "" {
					return r.svc.DeleteComment(r.ctx, id)
				}
				return nil
			}},
			{"create", func() error {
				r.create(t, rng, fmt.Sprintf("Procedure %02d", rng.IntN(40)))
				return nil
			}},
			{"delete", func() error {
				i := 12 + rng.IntN(len(r.procedures)-12) // shapes read the first ones by id
				id := r.procedures[i]
				r.procedures = append(r.procedures[:i], r.procedures[i+1:]...)
				return r.svc.DeleteProcedure(r.ctx, id)
			}},
			{"category rename", func() error {
				_, err := r.svc.UpdateCategory(r.ctx, pick(rng, r.categories), core.Some(fmt.Sprintf("Category %d", rng.IntN(100))))
				return err
			}},
			{"project rename", func() error {
				_, err := r.svc.UpdateProject(r.ctx, pick(rng, r.projects), core.ProjectInput{Name: core.Some(fmt.Sprintf("Project %d", rng.IntN(100)))})
				return err
			}},
			{"member rename", func() error {
				_, err := r.svc.UpdateMember(r.ctx, r.ws.MemberID, core.MemberInput{Name: core.Some(fmt.Sprintf("Max %d", rng.IntN(100)))})
				return err
			}},
		}
		hits := 0
		for i := range 150 {
			w := writes[i%len(writes)]
			if i >= len(writes) {
				w = pick(rng, writes)
			}
			if err := w.do(); err != nil {
				t.Fatalf("write %d (%s): %v", i, w.name, err)
			}
			hits += r.compare(t, fmt.Sprintf("write %d (%s)", i, w.name))
		}
		// Each round stores every shape afresh; the next write leaves
		// most of them alone. Without revalidation there are no hits.
		if hits == 0 {
			t.Fatal("no cached response survived a write: footprints are not used")
		}
		t.Logf("%d of %d reads after a write were hits", hits, 150*len(r.shapes()))
	})
}

// TestCachedReadSurvivesUnrelatedWrite pins the point of footprints: a list
// of COMPLETED procedures is still a hit after another procedure's priority
// changes, and is recomputed after one of its own changes.
func TestCachedReadSurvivesUnrelatedWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		r := newFootprintRig(t, db)
		list := footprintRead{name: "COMPLETED", path: "/procedures?limit=50&state=COMPLETED"}
		var inside, outside string
		for _, id := range r.procedures {
			_, body, _ := r.read(t, r.fresh, footprintRead{path: "/procedures/" + id})
			if strings.Contains(body, `"state":"COMPLETED"`) {
				inside = id
			} else {
				outside = id
			}
		}
		if inside == "" || outside == "" {
			t.Fatal("the seed has no COMPLETED procedure, or only those")
		}
		r.read(t, r.cached, list)
		for _, p := range []string{"LOW", "HIGH"} {
			if _, err := r.svc.UpdateProcedure(r.ctx, outside, core.UpdateProcedureInput{Priority: core.Some(p)}); err != nil {
				t.Fatal(err)
			}
			if _, _, how := r.read(t, r.cached, list); how != "hit" {
				t.Fatalf("after an unrelated write, X-Cache = %q; want hit", how)
			}
		}
		if _, err := r.svc.UpdateProcedure(r.ctx, inside, core.UpdateProcedureInput{Priority: core.Some("LOW")}); err != nil {
			t.Fatal(err)
		}
		if _, _, how := r.read(t, r.cached, list); how == "hit" {
			t.Fatal("after a write to a listed procedure, the list was served from the cache")
		}
		r.compare(t, "the last write")
	})
}

// TestRenumberedColumnIsNotStale moves procedures into a narrowing gap
// until the column is renumbered, which changes the positions of
// procedures the moves did not name: a cached read showing one of them
// must be recomputed.
func TestRenumberedColumnIsNotStale(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		r := newFootprintRig(t, db)
		state := "WAITING"
		var col []string
		for i := range 3 {
			due := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			p, err := r.svc.CreateProcedure(r.ctx, core.CreateProcedureInput{Name: fmt.Sprintf("Column %d", i), Priority: "LOW",
				State: state, DueAt: &due, CategoryID: r.categories[0], DoerID: r.members[0], ProjectID: r.projects[1]})
			if err != nil {
				t.Fatal(err)
			}
			col = append(col, p.ID.String())
		}
		top := footprintRead{name: "top of the column", path: "/procedures/" + col[0]}
		below, next := col[1], col[2]
		before := ""
		for i := range 80 {
			_, before, _ = r.read(t, r.cached, top)
			// Place next between the top one and the one directly
			// below it, then the other way round: each move halves
			// the gap under the top, until the column is renumbered.
			if _, err := r.svc.MoveProcedure(r.ctx, next, &state, &col[0], &below); err != nil {
				t.Fatalf("move %d: %v", i, err)
			}
			below, next = next, below
			_, cached, how := r.read(t, r.cached, top)
			_, fresh, _ := r.read(t, r.fresh, top)
			if cached != fresh {
				t.Fatalf("move %d: the top procedure is stale (X-Cache %q):\ncached %s\nfresh  %s", i, how, cached, fresh)
			}
			if cached != before {
				return // renumbered, and the cache followed
			}
		}
		t.Fatal("80 moves never renumbered the column; the test no longer reaches its case")
	})
}
