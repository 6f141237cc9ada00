//go:build unix

package bench

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
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/server"
	"github.com/procsvc/procsvc/internal/viewer"
)

// BenchmarkCaches weighs the caches of a request's data (docs/caching.md)
// each with and without it, everything else as a server runs by default
// (the response cache on, the change feed wired to it), on SQLite over
// CacheShape (W scaled down to 10 000 procedures, as the list benchmarks
// are, plus a noise workspace of 2 500) read by four members' tokens.
//
// An op is one round of ten requests by one member (the next member each
// round): the update mix's five REST list shapes (restShapes), four of them
// in GraphQL (loadShapeQuery) and the project dashboard (DashboardQuery).
//
//   - phase=cold: every round on a fresh handler and service (built outside
//     the timer), so every cache starts empty.
//   - phase=warm: the same handler round after round (after one untimed
//     round per member).
//   - phase=writes10: as warm, but one request in ten is a write: the
//     priority of one of the 500 newest procedures changes (updateProcedure).
//
// Compare with `benchstat -col /state`: state=on is the server's default
// (base=default) or the default without the response cache
// (base=uncached: what the caches beneath it buy when it misses, as every
// read after a write does), state=off the same server without the one
// cache. Besides ns/op it
// reports cpu-ns/op (the process's CPU time, the figure to compare on a
// busy machine) and stmts/op.
func BenchmarkCaches(b *testing.B) {
	w := newCacheWorkload(b, "sqlite")
	for _, c := range weighedCaches {
		for _, base := range c.bases {
			for _, phase := range []string{"cold", "warm", "writes10"} {
				for _, state := range []string{"on", "off"} {
					b.Run("cache="+c.name+"/base="+base+"/phase="+phase+"/state="+state, func(b *testing.B) {
						w.run(b, configured(base, state, c.off), phase)
					})
				}
			}
		}
	}
}

// BenchmarkCachesPostgres weighs on PostgreSQL what BenchmarkCaches weighs
// on SQLite where the database is what a cache spares: the prepared
// statements (internal/database: prepare.go, --db-prepare; PostgreSQL
// only) as the server runs, and the totals and shared edges beneath the
// response cache (base=uncached), where each statement they spare is a
// round trip. Warm and with writes only: the prepared statements live
// with the pool, so a fresh handler would not make them cold. The change
// feed is heard through LISTEN on PostgreSQL, which this benchmark does
// not run: the response cache's change log stays empty here.
func BenchmarkCachesPostgres(b *testing.B) {
	if os.Getenv(dbtest.EnvPostgres) == "" {
		b.Skipf("PostgreSQL only: set %s", dbtest.EnvPostgres)
	}
	w := newCacheWorkload(b, "postgres")
	for _, c := range []struct {
		name, base string
		off        func(*cacheConfig)
	}{
		{"prepared-statements", "default", func(c *cacheConfig) { c.unprepared = true }},
		{"totals", "uncached", offSwitch(b, "totals")},
		{"shared-edges", "uncached", offSwitch(b, "shared-edges")},
	} {
		for _, phase := range []string{"warm", "writes10"} {
			for _, state := range []string{"on", "off"} {
				b.Run("cache="+c.name+"/base="+c.base+"/phase="+phase+"/state="+state, func(b *testing.B) {
					w.run(b, configured(c.base, state, c.off), phase)
				})
			}
		}
	}
}

// CacheShape is BenchmarkCaches' workspace: W with a tenth of its
// procedures, so that a run of every cache fits a shared machine.
var CacheShape = Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3}

// cacheConfig is one server of BenchmarkCaches.
type cacheConfig struct {
	deps server.Deps
	core []core.Option
	// changeFeed wires the service's announcements to the handler's hub,
	// which feeds the response cache's change log (as a server does).
	changeFeed bool
	// unprepared serves from a pool that sends no prepared statement
	// (PostgreSQL: --db-prepare=false).
	unprepared bool
}

// configured is the server of base ("default", or "uncached": without the
// response cache) with the cache off applies to on or off (state).
func configured(base, state string, off func(*cacheConfig)) cacheConfig {
	cfg := cacheConfig{deps: server.Deps{ResponseCacheBytes: 64 << 20}, changeFeed: true}
	if base == "uncached" {
		cfg.deps.ResponseCacheBytes = 0
	}
	if state == "off" {
		off(&cfg)
	}
	return cfg
}

// weighedCaches are the caches BenchmarkCaches weighs, each with what turns
// it off: a serve flag's value where there is one, an option otherwise.
var weighedCaches = []struct {
	name  string
	bases []string
	off   func(*cacheConfig)
}{
	// --response-cache-mb 0.
	{"responses", []string{"default"}, func(c *cacheConfig) { c.deps.ResponseCacheBytes = 0 }},
	// Without the change feed, the response cache's change log hears of
	// no write, and no entry outlives its version.
	{"recentwrites", []string{"default"}, func(c *cacheConfig) { c.changeFeed = false }},
	{"totals", both, func(c *cacheConfig) { c.core = append(c.core, core.WithoutTotalsCache()) }},
	{"shared-edges", both, func(c *cacheConfig) { c.deps.Loader = append(c.deps.Loader, loader.WithoutShared()) }},
	// A document cache of one byte keeps no document.
	{"parsed-documents", both, func(c *cacheConfig) { c.deps.DocumentCacheBytes, c.deps.DocumentCacheWorkspaceBytes = 1, 1 }},
}

var both = []string{"default", "uncached"}

// offSwitch is what turns weighedCaches' cache name off.
func offSwitch(b *testing.B, name string) func(*cacheConfig) {
	for _, c := range weighedCaches {
		if c.name == name {
			return c.off
		}
	}
	b.Fatalf("no cache %q", name)
	return nil
}

// cacheWorkload is the seeded database and the members' tokens.
type cacheWorkload struct {
	db *database.DB
	// unprepared is db's database through a pool without prepared
	// statements (PostgreSQL only).
	unprepared *database.DB
	tokens     []string
	// page2 is the GraphQL cursor after the first page.
	page2 string
}

func newCacheWorkload(b *testing.B, dialect string) *cacheWorkload {
	ctx := context.Background()
	var db, unprepared *database.DB
	if dialect == "postgres" {
		// Two pools over one database: the server's default, and one
		// sending no prepared statement.
		url := dbtest.CreatePostgres(b)
		for _, prepare := range []bool{true, false} {
			d, err := database.Open(ctx, url, database.Options{Prepare: prepare, ProbeInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			if prepare {
				db = d
			} else {
				unprepared = d
			}
		}
		if err := db.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
	} else {
		db = dbtest.Open(b, dialect)
	}
	seeded, err := Seed(ctx, db.Client, "Bench", "BEN", CacheShape, 1)
	if err != nil {
		b.Fatal(err)
	}
	noise := CacheShape
	noise.Procedures /= 4
	if _, err := Seed(ctx, db.Client, "Noise", "NOI", noise, 2); err != nil {
		b.Fatal(err)
	}
	w := &cacheWorkload{db: db, unprepared: unprepared, tokens: []string{seeded.AdminToken}}
	if dialect == "postgres" {
		// As a production database has statistics (apitest.NewLists).
		if _, err := db.SQL.ExecContext(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
	for _, m := range seeded.MemberIDs[1:4] {
		secret, hash := auth.NewSecret()
		if _, err := db.Client.Token.Create().SetWorkspaceID(seeded.WorkspaceID).SetMemberID(m).SetName("bench").
			SetSecretHash(hash).Save(viewer.System(ctx)); err != nil {
			b.Fatal(err)
		}
		w.tokens = append(w.tokens, secret)
	}
	h := w.handler(cacheConfig{})
	var out struct {
		Data struct {
			Procedures struct{ PageInfo struct{ EndCursor string } }
		}
	}
	rec := w.do(b, h, w.graphQL(0, `query P($first: Int!) { procedures(first: $first) { pageInfo { endCursor } } }`, map[string]any{"first": 50}))
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Data.Procedures.PageInfo.EndCursor == "" {
		b.Fatalf("the first page's cursor: %v %s", err, rec.Body.String())
	}
	w.page2 = out.Data.Procedures.PageInfo.EndCursor
	// Each token's first use records lastUsedAt (a write): done here.
	for i := range w.tokens {
		w.do(b, h, w.rest(i, restShapes[0]))
	}
	return w
}

func (w *cacheWorkload) handler(cfg cacheConfig) http.Handler {
	d := cfg.deps
	opts := cfg.core
	db := w.db
	if cfg.unprepared {
		db = w.unprepared
	}
	if cfg.changeFeed {
		d.Hub = events.NewHub(events.HubOptions{})
		opts = append(opts, core.WithAnnouncer(server.Announcer(db, d.Hub)))
	}
	d.DB, d.Service, d.Log = db, core.New(db.Client, opts...), slog.New(slog.NewTextHandler(io.Discard, nil))
	return server.NewHandler(d)
}

func (w *cacheWorkload) rest(member int, shape string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/procedures?limit=50"+shape, nil)
	req.Header.Set("Authorization", "Bearer "+w.tokens[member])
	return req
}

func (w *cacheWorkload) graphQL(member int, query string, vars map[string]any) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w.tokens[member])
	return req
}

// read is request i (0..9) of a round by member.
func (w *cacheWorkload) read(member, i int) *http.Request {
	switch {
	case i < len(restShapes):
		return w.rest(member, restShapes[i])
	case i == 9:
		return w.graphQL(member, DashboardQuery, nil)
	}
	// GraphQL's shapes 1..4 (the second page, a filter, an order, another
	// filter); shape 0 is REST's alone.
	return w.graphQL(member, loadShapeQuery, shapeVars(i-len(restShapes)+1, 50, w.page2))
}

// write changes the priority of one of the 500 newest procedures.
func (w *cacheWorkload) write(member int, rng *rand.Rand) *http.Request {
	n := CacheShape.Procedures - rng.IntN(500)
	return w.graphQL(member, `mutation U($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { priority } }`,
		map[string]any{"id": "BEN-" + strconv.Itoa(n), "in": map[string]any{"priority": priorities[rng.IntN(len(priorities))]}})
}

// do serves req and fails b unless it answered 200 without errors.
func (w *cacheWorkload) do(b *testing.B, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || strings.HasPrefix(rec.Body.String(), `{"errors"`) {
		b.Fatalf("%s %s: status %d: %.300s", req.Method, req.URL, rec.Code, rec.Body.String())
	}
	return rec
}

func (w *cacheWorkload) run(b *testing.B, cfg cacheConfig, phase string) {
	h := w.handler(cfg)
	members := len(w.tokens)
	if phase != "cold" {
		for m := range members {
			for i := range 10 {
				w.do(b, h, w.read(m, i))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	db := w.db
	if cfg.unprepared {
		db = w.unprepared
	}
	start := db.Statements()
	cpuStart := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for round := 0; b.Loop(); round++ {
		if phase == "cold" {
			b.StopTimer()
			h = w.handler(cfg)
			b.StartTimer()
		}
		m := round % members
		for i := range 10 {
			req := w.read(m, i)
			if phase == "writes10" && i == round%10 {
				req = w.write(m, rng)
			}
			w.do(b, h, req)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpuStart)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(db.Statements()-start)/float64(b.N), "stmts/op")
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
