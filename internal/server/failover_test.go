package server_test

// procsvc through a PostgreSQL failover, as operators run it: a primary and
// a synchronous hot standby (internal/pgcluster), procsvc on a multi-host
// URL with target_session_attrs=read-write, writes, reads and a
// subscription running, then the primary fails and the standby is
// promoted. docs/operations.md, "Failover", describes what is guaranteed.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/config"
	"github.com/procsvc/procsvc/internal/pgcluster"
	"github.com/procsvc/procsvc/internal/server"
)

// failoverToken is the admin token the failover tests bootstrap.
const failoverToken = "failover-test-token-0123456789"

func TestFailover(t *testing.T) {
	pgcluster.Bin(t)
	scenarios := []struct {
		name string
		// fail makes the primary fail; after it the standby is promoted,
		// then rejoin (when set) runs.
		fail   func(t *testing.T, c *pgcluster.Cluster, primaryProxy *pgcluster.Proxy)
		rejoin bool
	}{
		{"PrimaryStopped", func(t *testing.T, c *pgcluster.Cluster, _ *pgcluster.Proxy) { c.Primary.Stop(t, "immediate") }, false},
		// The host vanishes: no RST, no FIN; every byte to it is lost.
		{"PrimarySilenced", func(t *testing.T, _ *pgcluster.Cluster, p *pgcluster.Proxy) { p.Silence() }, false},
		// The old primary comes back, as a standby of the new one, at
		// the URL's first host: connections that reach it are refused by
		// target_session_attrs, and none may write there.
		{"OldPrimaryRejoins", func(t *testing.T, c *pgcluster.Cluster, _ *pgcluster.Proxy) { c.Primary.Stop(t, "immediate") }, true},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := pgcluster.New(t, pgcluster.Options{Synchronous: true})
			c.Primary.Exec(t, "CREATE DATABASE procsvc")
			c.WaitReplayed(t, 30*time.Second)
			oldPrimary, standby := c.Primary, c.Standby
			p1 := pgcluster.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", oldPrimary.Port))
			p2 := pgcluster.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", standby.Port))
			url := fmt.Sprintf("postgres://postgres@127.0.0.1,127.0.0.1/procsvc?port=%d,%d&target_session_attrs=read-write&sslmode=disable", p1.Port(), p2.Port())
			base, logs := startServeLogged(t, "--database-url="+url, "--migrate", "--db-probe-interval=200ms", "--db-probe-timeout=1s",
				"--db-connect-timeout=1s", "--write-timeout=20s")
			project, category, me := firstID(t, base, "/projects"), firstID(t, base, "/categories"), firstID(t, base, "/members")

			events := subscribe(t, base)
			load := startLoad(t, base, fmt.Sprintf(`"projectId":%q,"categoryId":%q,"doerId":%q`, project, category, me))
			time.Sleep(1500 * time.Millisecond)

			failedAt := time.Now()
			sc.fail(t, c, p1)
			time.Sleep(time.Second)
			standby.Promote(t)
			promotedAt := time.Now()
			t.Logf("primary failed at +0; standby promoted at +%s", promotedAt.Sub(failedAt).Round(time.Millisecond))
			if sc.rejoin {
				c.Rejoin(t, oldPrimary, standby)
				t.Logf("old primary rejoined as a standby at +%s", time.Since(failedAt).Round(time.Millisecond))
			}
			// Load goes on until writes have succeeded for a while.
			waitFailover(t, 20*time.Second, "writes succeed again after the promotion", func() bool {
				return load.successesAfter(promotedAt.Add(2*time.Second)) >= 20
			})
			results := load.stop()

			// Nothing but 200 and 503; every acknowledged write is on the
			// new primary.
			acked, firstAfter := map[string]bool{}, time.Duration(-1)
			keys, maxVersion := map[string]bool{}, int64(0)
			counts := map[int]int{}
			for _, r := range results {
				counts[r.status]++
				switch {
				case r.status == http.StatusOK:
				case r.status == http.StatusServiceUnavailable:
					if !r.retryAfter {
						t.Errorf("a 503 without Retry-After: %s", r.body)
					}
				case r.what == "keyed" && r.status == http.StatusConflict && strings.Contains(r.body, "still in progress"):
					// Its first attempt was cut by the failover after
					// claiming the key: in progress until --write-timeout.
				case r.answerLost():
					// It committed, but the failover lost its answer.
				default:
					t.Errorf("%s answered %d: %s", r.what, r.status, r.body)
				}
				maxVersion = max(maxVersion, r.version)
				if r.what == "keyed" {
					keys[r.key] = true
				}
				if r.what == "write" && r.status == http.StatusOK {
					acked[r.shortID] = true
					if r.started.After(promotedAt) && (firstAfter < 0 || r.ended.Sub(promotedAt) < firstAfter) {
						firstAfter = r.ended.Sub(promotedAt)
					}
				}
			}
			t.Logf("answers: %v; %d writes acknowledged; first write after the promotion answered in %s", counts, len(acked), firstAfter)
			gap, gapFrom := longestWithoutWrite(results)
			t.Logf("unavailability: no write acknowledged for %s, from the last acknowledgement before it (at %s relative to the failure)",
				gap.Round(time.Millisecond), gapFrom.Sub(failedAt).Round(time.Millisecond))
			if firstAfter < 0 || firstAfter > 10*time.Second {
				t.Errorf("first successful write %s after the promotion; want within 10 s", firstAfter)
			}
			stored := map[string]bool{}
			newPrimary, err := sql.Open("postgres", standby.URL("procsvc"))
			if err != nil {
				t.Fatal(err)
			}
			defer newPrimary.Close()
			rows, err := newPrimary.Query("SELECT short_id FROM procedures")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				stored[id] = true
			}
			rows.Close()
			lost := 0
			for id := range acked {
				if !stored[id] {
					lost++
				}
			}
			if lost > 0 {
				t.Errorf("%d of %d acknowledged writes are not on the new primary", lost, len(acked))
			}
			// No key ran twice, and every key answered 200 or "answer
			// lost" ran once; the workspace's version never went back; the
			// tallies still count every procedure.
			ranTwice, resolved, lost := 0, map[string]bool{}, 0
			for _, r := range results {
				if r.what == "keyed" && (r.status == http.StatusOK || r.answerLost()) {
					resolved[r.key] = true
				}
				if r.answerLost() {
					lost++
				}
			}
			for key := range keys {
				var n int
				if err := newPrimary.QueryRow("SELECT count(*) FROM procedures WHERE name = $1", key).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 1 {
					ranTwice++
					t.Errorf("Idempotency-Key %s ran %d times", key, n)
				}
				if resolved[key] && n != 1 {
					t.Errorf("Idempotency-Key %s was answered as run, and ran %d times", key, n)
				}
			}
			var version int64
			if err := newPrimary.QueryRow("SELECT max(version) FROM workspaces").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if version < maxVersion {
				t.Errorf("the new primary's workspace version is %d, below %d that a write acknowledged", version, maxVersion)
			}
			var counted, tallied int64
			if err := newPrimary.QueryRow(`SELECT (SELECT count(*) FROM procedures), (SELECT sum(count) FROM procedure_tallies WHERE key = 'all')`).Scan(&counted, &tallied); err != nil {
				t.Fatal(err)
			}
			if counted != tallied {
				t.Errorf("the tally counts %d procedures; there are %d", tallied, counted)
			}
			twice := "none run twice"
			if ranTwice > 0 {
				twice = fmt.Sprintf("%d RUN TWICE", ranTwice)
			}
			t.Logf("%d keys (%d answered as run, %d of them 409 answer lost), %s; workspace version %d (acknowledged up to %d); %d procedures, tallied %d",
				len(keys), len(resolved), lost, twice, version, maxVersion, counted, tallied)
			log := logs.String()
			t.Logf("keyed commits whose outcome the failover left unknown: %d resolved as committed, %d as not committed, %d left in doubt",
				strings.Count(log, "its key shows it committed"), strings.Count(log, "its key shows it did not commit"),
				strings.Count(log, "its key stays in doubt"))

			// The subscription heard REFETCH once the listener moved, and
			// events after it.
			if !events.refetchThenCreated(15 * time.Second) {
				t.Errorf("the subscription did not receive REFETCH then later events; got %v", events.kinds())
			}
			waitFailover(t, 10*time.Second, "/readyz answers 200", func() bool {
				code, _ := get(t, base+"/readyz", "")
				return code == http.StatusOK
			})
			_, metrics := get(t, base+"/metrics", "")
			want := fmt.Sprintf(`procsvc_database_pool_server{pool="primary",role="primary",server="127.0.0.1:%d"} 1`, p2.Port())
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
		})
	}
}

// startServe runs `procsvc serve` in-process with args (and a known
// bootstrap token) until the test ends, and returns its base URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	base, _ := startServeLogged(t, args...)
	return base
}

// startServeLogged is startServe, also returning the server's log.
func startServeLogged(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	var cfg config.Config
	fs, applyEnv := cfg.FlagSet("serve", io.Discard)
	if err := fs.Parse(append([]string{"--addr=127.0.0.1:0", "--bootstrap-token=" + failoverToken, "--rate-limit=0"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = server.Run(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)), io.Discard, func(addr string) { ready <- addr })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("procsvc's log:\n%s", logs.String())
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr, logs
	case <-done:
		t.Fatalf("serve stopped: %v\n%s", runErr, logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("serve did not start:\n%s", logs.String())
	}
	return "", nil
}

func authorized(req *http.Request) *http.Request {
	req.Header.Set("Authorization", "Bearer "+failoverToken)
	return req
}

// firstID is the id of the first item of a REST list.
func firstID(t *testing.T, base, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	resp, err := http.DefaultClient.Do(authorized(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) == 0 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return list.Data[0].ID
}

func waitFailover(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loadAnswer is one request of the load.
type loadAnswer struct {
	what           string // "write", "keyed" or "read"
	key            string // a keyed write's Idempotency-Key
	status         int
	retryAfter     bool
	shortID        string
	version        int64 // X-Workspace-Version of a write
	body           string
	started, ended time.Time
}

type loadRun struct {
	client  *http.Client
	stopped chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	answers []loadAnswer
}

// startLoad runs 4 writers creating procedures (with refs, the JSON of
// their references) and 2 readers listing them.
func startLoad(t *testing.T, base, refs string) *loadRun {
	l := &loadRun{stopped: make(chan struct{}), client: &http.Client{Timeout: 30 * time.Second}}
	newProcedure := func(name, key string) *http.Request {
		body := fmt.Sprintf(`{"name":%q,%s,"priority":"LOW","state":"TODO","dueAt":"2027-01-01T09:00:00Z","content":"x"}`, name, refs)
		req, _ := http.NewRequest(http.MethodPost, base+"/procedures", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		return req
	}
	// run sends next's requests one after another until stop; next is
	// told the previous one's answer.
	run := func(next func(n int, last loadAnswer) (what, key string, req *http.Request)) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			last := loadAnswer{status: http.StatusOK}
			for n := 0; ; n++ {
				select {
				case <-l.stopped:
					return
				default:
				}
				what, key, req := next(n, last)
				if last = l.send(what, key, req); last.status != http.StatusOK {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	for w := range 4 {
		run(func(n int, _ loadAnswer) (string, string, *http.Request) {
			return "write", "", newProcedure(fmt.Sprintf("w%d-%d", w, n), "")
		})
	}
	// One writer sends each write with an Idempotency-Key and retries it,
	// same key, until it is answered 200 (or 409, its answer lost): through
	// the failover a key must never run twice.
	keyed := 0
	run(func(_ int, last loadAnswer) (string, string, *http.Request) {
		if last.status == http.StatusOK || last.answerLost() {
			keyed++
		}
		key := fmt.Sprintf("keyed-%d", keyed)
		return "keyed", key, newProcedure(key, key)
	})
	for range 2 {
		run(func(int, loadAnswer) (string, string, *http.Request) {
			req, _ := http.NewRequest(http.MethodGet, base+"/procedures?limit=5", nil)
			return "read", "", req
		})
	}
	return l
}

// answerLost reports whether a is a keyed write's retry answered 409
// because its write committed but the failover lost its answer.
func (a loadAnswer) answerLost() bool {
	return a.what == "keyed" && a.status == http.StatusConflict && strings.Contains(a.body, "lost its answer")
}

// send sends req and records its answer.
func (l *loadRun) send(what, key string, req *http.Request) loadAnswer {
	a := loadAnswer{what: what, key: key, started: time.Now()}
	resp, err := l.client.Do(authorized(req))
	if err != nil {
		a.status, a.body = -1, err.Error()
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.status, a.body, a.retryAfter = resp.StatusCode, string(b), resp.Header.Get("Retry-After") != ""
		a.version, _ = strconv.ParseInt(resp.Header.Get("X-Workspace-Version"), 10, 64)
		if what == "write" && resp.StatusCode == http.StatusOK {
			var p struct {
				ShortID string `json:"shortId"`
			}
			_ = json.Unmarshal(b, &p)
			a.shortID = p.ShortID
		}
	}
	a.ended = time.Now()
	l.mu.Lock()
	l.answers = append(l.answers, a)
	l.mu.Unlock()
	return a
}

// longestWithoutWrite is the longest span between two consecutive
// acknowledgements of writes (by the time their answers arrived), and when
// it began: the window in which no client could write.
func longestWithoutWrite(answers []loadAnswer) (time.Duration, time.Time) {
	var ends []time.Time
	for _, a := range answers {
		if a.what == "write" && a.status == http.StatusOK {
			ends = append(ends, a.ended)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
	var gap time.Duration
	var from time.Time
	for i := 1; i < len(ends); i++ {
		if d := ends[i].Sub(ends[i-1]); d > gap {
			gap, from = d, ends[i-1]
		}
	}
	return gap, from
}

// successesAfter counts the writes answered 200 that started after at.
func (l *loadRun) successesAfter(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.answers {
		if a.what == "write" && a.status == http.StatusOK && a.started.After(at) {
			n++
		}
	}
	return n
}

func (l *loadRun) stop() []loadAnswer {
	close(l.stopped)
	l.wg.Wait()
	return l.answers
}

// eventLog is a subscription's events, as they arrive.
type eventLog struct {
	mu   sync.Mutex
	seen []string // kinds
	more chan struct{}
}

var eventKind = regexp.MustCompile(`"kind":"([A-Z]+)"`)

// subscribe opens procedureEvents over Server-Sent Events.
func subscribe(t *testing.T, base string) *eventLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := `{"query":"subscription { procedureEvents { kind workspaceVersion } }"}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(authorized(req))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscribe: %d", resp.StatusCode)
	}
	e := &eventLog{more: make(chan struct{}, 1)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if m := eventKind.FindStringSubmatch(sc.Text()); m != nil {
				e.mu.Lock()
				e.seen = append(e.seen, m[1])
				e.mu.Unlock()
				select {
				case e.more <- struct{}{}:
				default:
				}
			}
		}
	}()
	return e
}

func (e *eventLog) kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// refetchThenCreated waits for a REFETCH followed by a CREATED.
func (e *eventLog) refetchThenCreated(limit time.Duration) bool {
	deadline := time.After(limit)
	for {
		ks := e.kinds()
		for i, k := range ks {
			if k == "REFETCH" && (i+1 < len(ks)) && strings.Contains(strings.Join(ks[i+1:], ","), "CREATED") {
				return true
			}
		}
		select {
		case <-e.more:
		case <-deadline:
			return false
		}
	}
}
