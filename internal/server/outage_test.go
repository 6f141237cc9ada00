package server_test

// Database faults seen through the whole HTTP surface: whatever the database
// does (goes away, has its backends terminated, keeps a lock, times out, is
// closed, is busy), procsvc answers 503 unavailable with Retry-After, never
// 500, readiness tells the truth, and service resumes by itself.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// faultGuard bounds every request of these tests: one that hangs fails.
const faultGuard = 30 * time.Second

// leaks are fragments of internal causes that must never reach a client.
var leaks = []string{"pq:", "sql:", "driver:", "dial tcp", "connection refused", "broken pipe", "EOF",
	"SQLITE", "database is locked", "lock timeout", "statement timeout", "canceling statement", "terminating connection"}

// faultEnv is procsvc's real handler over db, with a workspace, and its log.
type faultEnv struct {
	url    string
	ws     *apitest.Workspace
	log    *logBuffer
	client *http.Client
}

func newFaultEnv(t *testing.T, db *database.DB) *faultEnv {
	t.Helper()
	svc := core.New(db.Client)
	fx := &apitest.Server{DB: db, Service: svc}
	ws := fx.NewWorkspace(t, "Faults", "FLT")
	logs := &logBuffer{}
	ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: svc,
		Log: slog.New(slog.NewJSONHandler(logs, nil)), ResponseCacheBytes: 16 << 20, RequestTimeout: faultGuard}))
	t.Cleanup(ts.Close)
	c := ts.Client()
	c.Timeout = faultGuard
	return &faultEnv{url: ts.URL, ws: ws, log: logs, client: c}
}

// answer is one HTTP exchange.
type answer struct {
	status int
	header http.Header
	body   string
	// code is the error code of the body (REST) or of the first GraphQL
	// error; "" when none.
	code string
}

func (e *faultEnv) do(t *testing.T, method, path, token string, body any) answer {
	t.Helper()
	a, err := e.try(method, path, token, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

func (e *faultEnv) try(method, path, token string, body any) (answer, error) {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, r)
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	var parsed struct {
		Code   string `json:"code"`
		Errors []struct {
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if json.Unmarshal(raw, &parsed) == nil {
		a.code = parsed.Code
		if len(parsed.Errors) > 0 {
			a.code = parsed.Errors[0].Extensions.Code
		}
	}
	return a, nil
}

func (e *faultEnv) procBody(name string) map[string]any {
	return map[string]any{"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-02T03:04:05.678Z",
		"categoryId": e.ws.CategoryID, "doerId": e.ws.MemberID, "projectId": e.ws.ProjectID}
}

const faultCreateMutation = `mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`

func (e *faultEnv) gql(query string, vars map[string]any) map[string]any {
	return map[string]any{"query": query, "variables": vars}
}

// want503 asserts a REST-shaped (or pre-executor GraphQL) unavailable answer
// that shows no internal cause.
func want503(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status != http.StatusServiceUnavailable || a.code != "unavailable" {
		t.Fatalf("%s: want 503 unavailable, got %d %s", what, a.status, a.body)
	}
	wantNoLeak(t, what, a)
}

func wantNoLeak(t *testing.T, what string, a answer) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(a.body, l) {
			t.Fatalf("%s: the answer shows the internal cause (%q): %s", what, l, a.body)
		}
	}
}

// wantRetryAfter: REST answers unavailable with Retry-After.
func wantRetryAfter(t *testing.T, what string, a answer) {
	t.Helper()
	if a.header.Get("Retry-After") == "" {
		t.Fatalf("%s: 503 without Retry-After", what)
	}
}

// wantResolverUnavailable: a resolver failure on GraphQL keeps HTTP 200 and
// carries extensions.code "unavailable".
func wantResolverUnavailable(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status != http.StatusOK || a.code != "unavailable" {
		t.Fatalf("%s: want 200 with code unavailable, got %d %s", what, a.status, a.body)
	}
	wantNoLeak(t, what, a)
}

// fillPool leaves n idle connections in db's pool.
func fillPool(t *testing.T, db *database.DB, n int) {
	t.Helper()
	var conns []*sql.Conn
	for range n {
		c, err := db.SQL.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestReadinessFollowsTheDatabase: after every backend was terminated
// (PostgreSQL up), /readyz answers 200 at once and keeps doing so, like the
// API: it used to answer 503 once per dead pooled connection, twenty times
// in a row. When the database is unreachable it answers 503, and 200 again
// once it is back, without a restart.
func TestReadinessFollowsTheDatabase(t *testing.T) {
	dbtest.NeedPostgres(t)
	const pool = 20
	rawURL := dbtest.CreatePostgres(t)
	migrated(t, rawURL, database.Options{})
	proxy := newProxy(t, hostOf(t, rawURL))
	db := migrated(t, proxy.URL(t, rawURL), database.Options{MaxOpenConns: pool, Prepare: true})
	e := newFaultEnv(t, db)

	for round := range 2 {
		fillPool(t, db, pool)
		dbtest.TerminateBackends(t, rawURL)
		for i := range pool {
			if a := e.do(t, "GET", "/readyz", "", nil); a.status != http.StatusOK {
				t.Fatalf("round %d: /readyz #%d after the backends were terminated (PostgreSQL up): %d %s", round, i+1, a.status, a.body)
			}
		}
		if a := e.do(t, "GET", "/procedures?limit=5", e.ws.ViewToken, nil); a.status != http.StatusOK {
			t.Fatalf("round %d: the API after the backends were terminated: %d %s", round, a.status, a.body)
		}
	}

	proxy.Cut()
	a := e.do(t, "GET", "/readyz", "", nil)
	want503(t, "/readyz with the database unreachable", a)
	wantRetryAfter(t, "/readyz", a)
	proxy.Restore()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := e.do(t, "GET", "/readyz", "", nil)
		if a.status == http.StatusOK {
			break
		}
		want503(t, "/readyz while the database comes back", a)
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d 5 s after the database came back", a.status)
		}
	}
	if a := e.do(t, "GET", "/procedures?limit=5", e.ws.ViewToken, nil); a.status != http.StatusOK {
		t.Fatalf("the API once ready: %d %s", a.status, a.body)
	}
}

// TestClosedDatabaseAnswers503: a closed pool (the process shutting down)
// answers 503 with Retry-After on REST reads and writes, and 503 with code
// unavailable on GraphQL (authentication fails before the executor runs);
// the cause is logged, never shown.
func TestClosedDatabaseAnswers503(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newFaultEnv(t, db)
		db.SQL.Close()
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/procedures?limit=5", nil},
			{"POST", "/procedures", e.procBody("closed")},
		} {
			a := e.do(t, r.method, r.path, e.ws.MemberToken, r.body)
			want503(t, r.method+" "+r.path, a)
			wantRetryAfter(t, r.method+" "+r.path, a)
		}
		want503(t, "GraphQL", e.do(t, "POST", "/graphql", e.ws.MemberToken, e.gql(`{ procedures(first: 5) { totalCount } }`, nil)))
		if !strings.Contains(e.log.String(), "database is closed") {
			t.Fatalf("the cause was not logged:\n%s", e.log.String())
		}
	})
}

// TestHeldLockAnswers503: a transaction left open on the workspace used to
// hang every write (59 s, until the request's deadline) and every request
// whose token was due a lastUsedAt write. Now writes fail after the lock
// (or statement) timeout, answered 503 with Retry-After on REST and code
// unavailable on GraphQL (HTTP 200, as for any resolver error), while reads,
// even with a token due its lastUsedAt write, are served. When the lock is
// released, writes go through again.
func TestHeldLockAnswers503(t *testing.T) {
	dbtest.Dialects(t) // fails under CI=true without PostgreSQL
	type setup struct {
		name       string
		driverName string
		dsn, url   string
		opts       database.Options
	}
	var cases []setup
	sqlitePath := filepath.Join(t.TempDir(), "locked.db")
	// A short busy timeout stands for the default 10 s.
	cases = append(cases, setup{name: "sqlite busy", driverName: "sqlite", dsn: "file:" + sqlitePath,
		url: "sqlite://" + sqlitePath + "?_pragma=busy_timeout(200)"})
	if os.Getenv(dbtest.EnvPostgres) != "" {
		for _, c := range []struct {
			name string
			opts database.Options
		}{
			{"postgres lock_timeout", database.Options{LockTimeout: 200 * time.Millisecond, StatementTimeout: faultGuard}},
			{"postgres statement_timeout", database.Options{StatementTimeout: 300 * time.Millisecond}},
		} {
			cases = append(cases, setup{name: c.name, driverName: "postgres", opts: c.opts})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.driverName == "postgres" {
				c.url = dbtest.CreatePostgres(t)
				c.dsn = c.url
				c.opts.Prepare = true
			}
			db := migrated(t, c.url, c.opts)
			e := newFaultEnv(t, db)
			if a := e.do(t, "GET", "/procedures?limit=5", e.ws.MemberToken, nil); a.status != http.StatusOK {
				t.Fatalf("before the lock: %d %s", a.status, a.body)
			}
			release := dbtest.HoldWorkspace(t, c.driverName, c.dsn, e.ws.ID)

			a := e.do(t, "POST", "/procedures", e.ws.MemberToken, e.procBody("behind a lock"))
			want503(t, "REST write behind a held lock", a)
			wantRetryAfter(t, "REST write", a)
			wantResolverUnavailable(t, "GraphQL write behind a held lock",
				e.do(t, "POST", "/graphql", e.ws.MemberToken, e.gql(faultCreateMutation, map[string]any{"in": e.procBody("behind a lock")})))
			// The viewer's token was never used: its lastUsedAt write is due.
			if a := e.do(t, "GET", "/procedures?limit=5", e.ws.ViewToken, nil); a.status != http.StatusOK {
				t.Fatalf("a read with a token due its lastUsedAt write, behind the lock: %d %s", a.status, a.body)
			}
			if a := e.do(t, "POST", "/graphql", e.ws.ViewToken, e.gql(`{ procedures(first: 5) { totalCount } }`, nil)); a.status != http.StatusOK || a.code != "" {
				t.Fatalf("a GraphQL read behind the lock: %d %s", a.status, a.body)
			}

			release()
			if a := e.do(t, "POST", "/procedures", e.ws.MemberToken, e.procBody("after the lock")); a.status != http.StatusOK {
				t.Fatalf("a write after the lock was released: %d %s", a.status, a.body)
			}
		})
	}
}

// outcome is one request of the outage test.
type outcome struct {
	write      bool
	name       string // the procedure a write created
	graphql    bool
	start, end int32 // phase when sent and when answered
	status     int
	code       string
	retryAfter bool
	leak       string
	at         time.Time
	err        error
}

// Phases of the outage test.
const (
	phaseUp int32 = iota
	phaseCut
	phaseRestored
)

// TestOutageUnderLoad: procsvc's real handler over PostgreSQL behind a TCP
// proxy, under a bounded mix of REST writes (procedure creates) and reads
// (REST and GraphQL). The proxy is cut (every connection dropped, new ones
// refused) and restored. Every answer is 200 or 503, never 500; every write
// sent and answered during the cut is a 503 with Retry-After; every write
// answered 200 is stored (read back directly, not through the proxy); and
// service resumes within 5 s of the restore.
func TestOutageUnderLoad(t *testing.T) {
	dbtest.NeedPostgres(t)
	const (
		workers      = 4
		before       = 40   // answers before the cut
		cutWrites    = 20   // writes sent and answered during the cut
		after        = 40   // answers after the first success past the restore
		maxPerPhase  = 5000 // bound on requests in the cut and recovery phases
		recoverLimit = 5 * time.Second
	)
	rawURL := dbtest.CreatePostgres(t)
	direct := migrated(t, rawURL, database.Options{})
	proxy := newProxy(t, hostOf(t, rawURL))
	db := migrated(t, proxy.URL(t, rawURL), database.Options{MaxOpenConns: 8, Prepare: true,
		LockTimeout: 5 * time.Second, StatementTimeout: 30 * time.Second, IdleInTransactionTimeout: time.Minute})
	e := newFaultEnv(t, db)

	var phase atomic.Int32
	jobs := make(chan int)
	results := make(chan outcome)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n := range jobs {
				o := outcome{write: n%2 == 0, graphql: n%4 == 1, start: phase.Load()}
				var a answer
				var err error
				switch {
				case o.write:
					o.name = fmt.Sprintf("outage %05d", n)
					a, err = e.try("POST", "/procedures", e.ws.MemberToken, e.procBody(o.name))
				case o.graphql:
					a, err = e.try("POST", "/graphql", e.ws.ViewToken, e.gql(`{ procedures(first: 5) { totalCount } }`, nil))
				default:
					a, err = e.try("GET", "/procedures?limit=5", e.ws.ViewToken, nil)
				}
				o.end, o.at, o.err = phase.Load(), time.Now(), err
				o.status, o.code, o.retryAfter = a.status, a.code, a.header.Get("Retry-After") != ""
				for _, l := range leaks {
					if strings.Contains(a.body, l) {
						o.leak = a.body
					}
				}
				results <- o
			}
		})
	}
	var all []outcome
	next, inFlight := 0, 0
	send := func() {
		jobs <- next
		next++
		inFlight++
	}
	// run keeps workers busy until done says stop or limit answers came.
	run := func(limit int, done func(o outcome) bool) bool {
		for range workers - inFlight {
			send()
		}
		for range limit {
			o := <-results
			inFlight--
			all = append(all, o)
			if o.err != nil {
				t.Errorf("request failed without an answer: %v", o.err)
			}
			if done(o) {
				return true
			}
			send()
		}
		return false
	}
	count := 0
	run(before, func(outcome) bool { count++; return count == before })

	proxy.Cut() // with requests in flight
	phase.Store(phaseCut)
	cutAt := time.Now()
	count = 0
	if !run(maxPerPhase, func(o outcome) bool {
		if o.write && o.start == phaseCut && o.end == phaseCut {
			count++
		}
		return count == cutWrites
	}) {
		t.Fatalf("fewer than %d writes answered during the cut", cutWrites)
	}
	cutFor := time.Since(cutAt)

	proxy.Restore()
	restoredAt := time.Now()
	phase.Store(phaseRestored)
	var recovery time.Duration
	if !run(maxPerPhase, func(o outcome) bool {
		if o.write && o.start == phaseRestored && o.status == http.StatusOK {
			recovery = o.at.Sub(restoredAt)
			return true
		}
		if time.Since(restoredAt) > recoverLimit {
			t.Fatalf("no write succeeded within %s of the restore (last: %d %s)", recoverLimit, o.status, o.code)
		}
		return false
	}) {
		t.Fatalf("no write succeeded in %d requests after the restore", maxPerPhase)
	}
	recovered := len(all)
	count = 0
	run(after, func(outcome) bool { count++; return count == after })
	close(jobs)
	for range inFlight {
		all = append(all, <-results)
	}
	wg.Wait()

	// Read back every acknowledged write, directly.
	stored := map[string]bool{}
	rows, err := direct.SQL.QueryContext(context.Background(), "SELECT name FROM procedures WHERE name LIKE 'outage %'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		stored[name] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()

	type key struct {
		phase  string
		status int
	}
	statuses := map[key]int{}
	phaseName := func(o outcome) string {
		names := []string{"up", "cut", "restored"}
		if o.start != o.end {
			return names[o.start] + "→" + names[o.end]
		}
		return names[o.start]
	}
	var cutWrites503, acked, ambiguous int
	for i, o := range all {
		kind := "read"
		if o.write {
			kind = "write"
		}
		statuses[key{kind + " " + phaseName(o), o.status}]++
		switch {
		case o.err != nil:
		case o.status != http.StatusOK && o.status != http.StatusServiceUnavailable:
			t.Errorf("%s in phase %s answered %d %s", kind, phaseName(o), o.status, o.code)
		case o.status == http.StatusServiceUnavailable && o.code != "unavailable":
			t.Errorf("a 503 with code %q", o.code)
		case o.status == http.StatusServiceUnavailable && !o.retryAfter:
			t.Errorf("a 503 without Retry-After (graphql: %v)", o.graphql)
		case o.status == http.StatusOK && o.code != "":
			// GraphQL: a resolver error answered with 200.
			if o.code != "unavailable" {
				t.Errorf("GraphQL read in phase %s: code %q", phaseName(o), o.code)
			}
		}
		if o.leak != "" {
			t.Errorf("an answer shows an internal cause: %s", o.leak)
		}
		if o.write && o.start == phaseCut && o.end == phaseCut {
			if o.status != http.StatusServiceUnavailable {
				t.Errorf("a write during the cut answered %d", o.status)
			}
			cutWrites503++
		}
		if o.write && o.status == http.StatusOK {
			acked++
			if !stored[o.name] {
				t.Errorf("write %q was answered 200 but is not stored", o.name)
			}
		}
		if o.write && o.status != http.StatusOK && stored[o.name] {
			ambiguous++ // committed, but the answer was lost with the connection
		}
		if i >= recovered && o.start == phaseRestored && o.status != http.StatusOK {
			t.Errorf("after recovery a %s answered %d %s", kind, o.status, o.code)
		}
	}
	t.Logf("%d requests by %d workers; cut for %s; %d writes sent and answered during the cut, all 503: %v",
		len(all), workers, cutFor.Round(time.Millisecond), cutWrites503, cutWrites503 == cutWrites)
	t.Logf("first successful write %s after the restore; %d writes acknowledged, all stored; %d unacknowledged writes stored anyway",
		recovery.Round(time.Millisecond), acked, ambiguous)
	var lines []string
	for k, n := range statuses {
		lines = append(lines, fmt.Sprintf("  %-22s %d: %d", k.phase, k.status, n))
	}
	slices.Sort(lines)
	t.Logf("answers by kind, phase (sent→answered) and status:\n%s", strings.Join(lines, "\n"))
}
