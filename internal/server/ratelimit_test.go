package server_test

// The per-token rate limit through the whole handler, on both faces and
// both databases: a token over its limit is refused 429 rate_limited with
// Retry-After and the RateLimit headers while another token of the same
// workspace goes on; GraphQL spends by the operation's cost; per-workspace
// overrides; off means no headers and no 429. The limiter's clock is the
// test's: nothing here depends on wall-clock time.

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/server"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// limitedServer serves db's full handler (response cache on, as in
// production) with the rate limit that args configure, as flags of
// `procsvc serve`, on clk.
func limitedServer(t *testing.T, db *database.DB, clk *testClock, args ...string) *apitest.Server {
	t.Helper()
	var cfg config.Config
	fs, applyEnv := cfg.FlagSet("serve", io.Discard)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	lim, err := server.NewRateLimiter(cfg.RateLimit, ratelimit.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	svc := core.New(db.Client)
	ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ResponseCacheBytes: 16 << 20, RateLimit: lim, MaxResponseBytes: cfg.MaxResponseMB << 20}))
	t.Cleanup(ts.Close)
	return &apitest.Server{URL: ts.URL, DB: db, Service: svc, HTTP: ts.Client()}
}

func countRows(t *testing.T, db *database.DB, table string) int {
	t.Helper()
	var n int
	if err := db.SQL.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func newClock() *testClock { return &testClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)} }

type restAnswer struct {
	status int
	header http.Header
	code   string
	body   []byte
}

func restGet(t *testing.T, s *apitest.Server, token, path string) restAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Code string `json:"code"`
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &body)
	return restAnswer{status: resp.StatusCode, header: resp.Header, code: body.Code, body: raw}
}

// wantHeaders checks the RateLimit headers (and Retry-After: "" for none).
func wantHeaders(t *testing.T, what string, h http.Header, limit, remaining, reset, retry string) {
	t.Helper()
	got := [4]string{h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset"), h.Get("Retry-After")}
	if want := [4]string{limit, remaining, reset, retry}; got != want {
		t.Fatalf("%s: RateLimit-Limit, -Remaining, -Reset, Retry-After = %q, want %q", what, got, want)
	}
}

// gqlRefused checks a GraphQL 429: the pre-execution error shape (no data
// key) with code rate_limited.
func gqlRefused(t *testing.T, what string, s *apitest.Server, token, query string) http.Header {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]json.RawMessage
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %s", what, raw)
	}
	var errs []apitest.GQLError
	_ = json.Unmarshal(out["errors"], &errs)
	if _, hasData := out["data"]; resp.StatusCode != http.StatusTooManyRequests || hasData || len(errs) != 1 ||
		errs[0].Extensions.Code != "rate_limited" || errs[0].Extensions.RequestID == "" {
		t.Fatalf("%s: status %d %s, want 429 with one rate_limited error and no data", what, resp.StatusCode, raw)
	}
	return resp.Header
}

func TestRateLimitPerToken(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		clk := newClock()
		s := limitedServer(t, db, clk, "--rate-limit", "1", "--rate-burst", "3")
		w := s.NewWorkspace(t, "Limits", "LIM")

		t.Run("REST", func(t *testing.T) {
			for i, want := range []struct{ remaining, reset string }{{"2", "1"}, {"1", "2"}, {"0", "3"}} {
				a := restGet(t, s, w.AdminToken, "/projects")
				if a.status != http.StatusOK {
					t.Fatalf("request %d: %d %s", i+1, a.status, a.code)
				}
				wantHeaders(t, "REST within the burst", a.header, "3", want.remaining, want.reset, "")
			}
			a := restGet(t, s, w.AdminToken, "/projects")
			if a.status != http.StatusTooManyRequests || a.code != "rate_limited" {
				t.Fatalf("over the burst: %d %q, want 429 rate_limited", a.status, a.code)
			}
			wantHeaders(t, "REST refusal", a.header, "3", "0", "3", "1")
			// Another token of the same workspace has its own bucket.
			b := restGet(t, s, w.MemberToken, "/projects")
			if b.status != http.StatusOK {
				t.Fatalf("member's token: %d %s", b.status, b.code)
			}
			wantHeaders(t, "member's token", b.header, "3", "2", "1", "")
			// The admin's bucket is shared by both faces.
			gqlRefused(t, "admin's token on GraphQL", s, w.AdminToken, `{ viewer { id } }`)
			// A second later the admin's bucket holds one token.
			clk.Advance(time.Second)
			if a := restGet(t, s, w.AdminToken, "/projects"); a.status != http.StatusOK {
				t.Fatalf("a second later: %d %s", a.status, a.code)
			}
		})

		t.Run("GraphQL", func(t *testing.T) {
			token := w.ViewToken
			for i, want := range []struct{ remaining, reset string }{{"2", "1"}, {"1", "2"}, {"0", "3"}} {
				// Identical queries: replays of the response cache after
				// the first, which count all the same.
				r := s.GraphQL(t, token, `{ viewer { id } }`, nil)
				if r.Status != http.StatusOK || len(r.Errors) > 0 {
					t.Fatalf("query %d: %d %+v", i+1, r.Status, r.Errors)
				}
				wantHeaders(t, "GraphQL within the burst", r.Header, "3", want.remaining, want.reset, "")
			}
			h := gqlRefused(t, "GraphQL over the burst", s, token, `{ viewer { name } }`)
			wantHeaders(t, "GraphQL refusal", h, "3", "0", "3", "1")
			// Another token of the same workspace goes on.
			if r := s.GraphQL(t, w.MemberToken, `{ workspace { id } }`, nil); r.Status != http.StatusOK || r.Header.Get("RateLimit-Limit") != "3" {
				t.Fatalf("member's token: %d %+v %v", r.Status, r.Errors, r.Header)
			}
		})

		t.Run("RefusedMutationDoesNotRun", func(t *testing.T) {
			before := countRows(t, db, "categories")
			// The admin spent its token of the second above on REST.
			gqlRefused(t, "refused mutation", s, w.AdminToken, `mutation { createCategory(input: {name: "Never"}) { id } }`)
			if after := countRows(t, db, "categories"); after != before {
				t.Fatalf("a refused mutation wrote: %d categories, %d before", after, before)
			}
		})
	})
}

func TestRateLimitGraphQLCostByPageSize(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		clk := newClock()
		s := limitedServer(t, db, clk, "--rate-limit", "1", "--rate-burst", "10")
		w := s.NewWorkspace(t, "Cost", "CST")
		token := w.MemberToken
		remaining := func(what string, h http.Header, want string) {
			t.Helper()
			if got := h.Get("RateLimit-Remaining"); got != want {
				t.Fatalf("%s: RateLimit-Remaining %q, want %q", what, got, want)
			}
		}
		gql := func(what, query, want string) {
			t.Helper()
			r := s.GraphQL(t, token, query, nil)
			if r.Status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("%s: %d %+v", what, r.Status, r.Errors)
			}
			remaining(what, r.Header, want)
		}
		// Complexity 7 (5 + nodes + id): 1 token.
		gql("a page of 5", `{ procedures(first: 5) { nodes { id } } }`, "9")
		// Complexity 102: 2 tokens.
		gql("a page of 100", `{ procedures(first: 100) { nodes { id } } }`, "7")
		// Complexity 306: 4 tokens.
		const three = `{ a: procedures(first: 100) { nodes { id } } b: procedures(first: 100) { nodes { id } } c: projects(first: 100) { nodes { id } } }`
		gql("three pages of 100", three, "3")
		// The same query again is replayed from the response cache, no
		// resolver running: 1 token.
		r := s.GraphQL(t, token, three, nil)
		if r.Status != http.StatusOK || r.Header.Get("X-Cache") != "hit" {
			t.Fatalf("replay: %d, X-Cache %q", r.Status, r.Header.Get("X-Cache"))
		}
		remaining("a replay", r.Header, "2")
		// A REST list costs 1 whatever its page size.
		a := restGet(t, s, token, "/procedures?limit=100")
		if a.status != http.StatusOK {
			t.Fatalf("REST list: %d %s", a.status, a.code)
		}
		remaining("REST list of 100", a.header, "1")
		// Cost 4 with 1 token left: refused until 3 more come (3 s); the
		// refusal spends nothing.
		h := gqlRefused(t, "cost 4 of 1", s, token, strings.ReplaceAll(three, "c:", "d:"))
		wantHeaders(t, "cost 4 of 1", h, "10", "1", "9", "3")
		gql("a page of 5 after the refusal", `{ x: procedures(first: 5) { nodes { id } } }`, "0")
	})
}

func TestRateLimitWorkspaceOverride(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		clk := newClock()
		// The handler reads the override per request: workspaces are made
		// first, through a server without limits, so that their ids can
		// be given as flags.
		plain := limitedServer(t, db, clk, "--rate-limit", "0")
		def := plain.NewWorkspace(t, "Default", "DEF")
		big := plain.NewWorkspace(t, "Big", "BIG")
		free := plain.NewWorkspace(t, "Free", "FRE")
		s := limitedServer(t, db, clk, "--rate-limit", "1", "--rate-burst", "2",
			"--rate-limit-workspace", big.ID+"=1/5", "--rate-limit-workspace", free.ID+"=0")

		// The default: 2, then 429.
		for i := range 2 {
			if a := restGet(t, s, def.AdminToken, "/categories"); a.status != http.StatusOK || a.header.Get("RateLimit-Limit") != "2" {
				t.Fatalf("default workspace, request %d: %d %v", i+1, a.status, a.header)
			}
		}
		if a := restGet(t, s, def.AdminToken, "/categories"); a.status != http.StatusTooManyRequests {
			t.Fatalf("default workspace over 2: %d", a.status)
		}
		// The overridden workspace: 5 on each face's token, then 429.
		for i := range 5 {
			a := restGet(t, s, big.AdminToken, "/categories")
			if a.status != http.StatusOK {
				t.Fatalf("overridden workspace, request %d: %d %s", i+1, a.status, a.code)
			}
			wantHeaders(t, "overridden workspace", a.header, "5", strconv.Itoa(4-i), strconv.Itoa(1+i), "")
			r := s.GraphQL(t, big.MemberToken, `query Q($i: Int) { categories(first: $i) { totalCount } }`, map[string]any{"i": i + 1})
			if r.Status != http.StatusOK || r.Header.Get("RateLimit-Limit") != "5" {
				t.Fatalf("overridden workspace, GraphQL %d: %d %+v", i+1, r.Status, r.Errors)
			}
		}
		if a := restGet(t, s, big.AdminToken, "/categories"); a.status != http.StatusTooManyRequests || a.code != "rate_limited" {
			t.Fatalf("overridden workspace over 5: %d %s", a.status, a.code)
		}
		gqlRefused(t, "overridden workspace over 5 on GraphQL", s, big.MemberToken, `{ viewer { id } }`)
		// The exempt workspace: never limited, no headers.
		for i := range 20 {
			a := restGet(t, s, free.AdminToken, "/categories")
			if a.status != http.StatusOK || a.header.Get("RateLimit-Limit") != "" {
				t.Fatalf("exempt workspace, request %d: %d %v", i+1, a.status, a.header)
			}
		}
	})
}

func TestRateLimitOff(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		clk := newClock()
		w := limitedServer(t, db, clk, "--rate-limit", "0").NewWorkspace(t, "Off", "OFF")
		// Off, although an override names the workspace: 0 turns the
		// whole limit off.
		s := limitedServer(t, db, clk, "--rate-limit", "0", "--rate-burst", "1",
			"--rate-limit-workspace", w.ID+"=1/1")
		for i := range 20 {
			a := restGet(t, s, w.AdminToken, "/projects")
			if a.status != http.StatusOK {
				t.Fatalf("REST request %d: %d %s", i+1, a.status, a.code)
			}
			r := s.GraphQL(t, w.AdminToken, `{ procedures(first: 100) { nodes { id } } }`, nil)
			if r.Status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("GraphQL request %d: %d %+v", i+1, r.Status, r.Errors)
			}
			for _, h := range []http.Header{a.header, r.Header} {
				for _, name := range []string{"RateLimit-Limit", "RateLimit-Policy", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"} {
					if v := h.Get(name); v != "" {
						t.Fatalf("request %d: %s: %s with the limit off", i+1, name, v)
					}
				}
			}
		}
	})
}
