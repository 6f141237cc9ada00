package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/browsertest"
	"github.com/procsvc/procsvc/internal/cli"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// syncBuffer is a bytes.Buffer safe to read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func env(vars map[string]string, out, errOut *syncBuffer) cli.Env {
	return cli.Env{Stdout: out, Stderr: errOut, Getenv: func(k string) string { return vars[k] }}
}

var tokenLine = regexp.MustCompile(`export PROCSVC_TOKEN=(pms_[A-Za-z0-9_-]+)`)

// TestServeBootsAndPrintsAWorkingToken is the README's first command: serve on
// an empty SQLite database prints a token that works against /graphql, and
// SIGTERM (context cancellation) stops it cleanly.
func TestServeBootsAndPrintsAWorkingToken(t *testing.T) {
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "procsvc.db")
	var out, errOut syncBuffer
	ready := make(chan string, 1)
	e := env(map[string]string{"DATABASE_URL": dbURL, "PROCSVC_ADDR": "127.0.0.1:0"}, &out, &errOut)
	e.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, nil, e) }()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("serve exited with %d: %s", code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	m := tokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no token printed; stdout:\n%s", out.String())
	}
	// The first line logged says which database this is.
	first, _, _ := strings.Cut(errOut.String(), "\n")
	if !strings.Contains(first, `"msg":"database opened"`) || !strings.Contains(first, "sqlite file "+strings.TrimPrefix(dbURL, "sqlite://")) {
		t.Fatalf("the first line logged does not name the database file:\n%s", errOut.String())
	}
	// Where to go next, on the address bound: the printed URLs are the
	// ones used below.
	base := "http://" + addr
	if want := "procsvc: listening on " + base + " — GraphQL " + base + "/graphql, playground " + base + "/playground\n"; !strings.Contains(out.String(), want) {
		t.Fatalf("stdout lacks %q:\n%s", want, out.String())
	}
	if resp, err := http.Get(base + "/playground"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the printed playground URL: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	body := `{"query":"{ viewer { name role } procedures(first: 5) { totalCount nodes { shortId project { name } } } }"}`
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Data struct {
			Viewer     struct{ Name, Role string }
			Procedures struct {
				TotalCount int
				Nodes      []struct{ ShortID string }
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.Data.Viewer.Role != "ADMIN" || got.Data.Procedures.TotalCount != 1 || got.Data.Procedures.Nodes[0].ShortID != "PRC-1" {
		t.Fatalf("unexpected answer: %+v", got)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited with %d after shutdown: %s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}

	// A second start on the same database does not bootstrap again.
	var out2, err2 syncBuffer
	ctx2, cancel2 := context.WithCancel(context.Background())
	e2 := env(map[string]string{"DATABASE_URL": dbURL, "PROCSVC_ADDR": "127.0.0.1:0"}, &out2, &err2)
	e2.Ready = func(string) { cancel2() }
	if code := cli.Run(ctx2, []string{"serve"}, e2); code != 0 {
		t.Fatalf("second start exited %d: %s", code, err2.String())
	}
	if strings.Contains(out2.String(), "PROCSVC_TOKEN") {
		t.Fatalf("second start printed a new token:\n%s", out2.String())
	}
}

// listeningLine is serve's line saying where to go.
var listeningLine = regexp.MustCompile(`procsvc: listening on (http://\S+) — GraphQL (\S+), playground (\S+)\n`)

// TestServeOnATakenPortTouchesNothing: a start on a port another server
// holds fails before it opens the database, so it neither bootstraps nor
// prints a token no server would serve (nor does one whose --metrics-addr
// is taken); the next start on a free port then bootstraps and prints the
// token. Its address, ":0", has no host, and the
// URLs it prints name localhost, where it answers.
func TestServeOnATakenPortTouchesNothing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	file := filepath.Join(t.TempDir(), "procsvc.db")
	vars := map[string]string{"DATABASE_URL": "sqlite://" + file, "PROCSVC_ADDR": taken.Addr().String()}
	var out, errOut syncBuffer
	e := env(vars, &out, &errOut)
	e.Ready = func(addr string) { t.Errorf("serve listens on %s, a taken port", addr) }
	if code := cli.Run(context.Background(), []string{"serve"}, e); code != 1 {
		t.Fatalf("serve on a taken port exited %d, want 1:\n%s%s", code, out.String(), errOut.String())
	}
	want := "procsvc: cannot listen on " + taken.Addr().String() + ": address already in use — is another procsvc running? use --addr"
	if !strings.Contains(errOut.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errOut.String())
	}
	if strings.Contains(out.String(), "PROCSVC_TOKEN") || strings.Contains(out.String(), "created workspace") {
		t.Fatalf("a failed start bootstrapped:\n%s", out.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a failed start touched the database %s: %v", file, err)
	}

	// The internal metrics listener is bound before bootstrap too.
	metricsVars := map[string]string{"DATABASE_URL": vars["DATABASE_URL"], "PROCSVC_ADDR": "127.0.0.1:0", "PROCSVC_METRICS_ADDR": taken.Addr().String()}
	var outM, errOutM syncBuffer
	if code := cli.Run(context.Background(), []string{"serve"}, env(metricsVars, &outM, &errOutM)); code != 1 || strings.Contains(outM.String(), "PROCSVC_TOKEN") {
		t.Fatalf("serve with a taken --metrics-addr exited %d (want 1), printed:\n%s%s", code, outM.String(), errOutM.String())
	}
	var list, listErr syncBuffer
	if code := cli.Run(context.Background(), []string{"workspace", "list"}, env(vars, &list, &listErr)); code != 0 || strings.Count(list.String(), "\n") != 1 {
		t.Fatalf("after a failed start, workspace list exited %d and lists more than its header:\n%s%s", code, list.String(), listErr.String())
	}

	vars["PROCSVC_ADDR"] = ":0"
	var out2, errOut2 syncBuffer
	e2 := env(vars, &out2, &errOut2)
	ready := make(chan string, 1)
	e2.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, []string{"serve"}, e2) }()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("serve on a free port exited %d: %s", code, errOut2.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	token := tokenLine.FindStringSubmatch(out2.String())
	urls := listeningLine.FindStringSubmatch(out2.String())
	if token == nil || urls == nil {
		t.Fatalf("no token or no URLs printed:\n%s", out2.String())
	}
	_, port, _ := net.SplitHostPort(addr)
	if base := "http://localhost:" + port; urls[1] != base || urls[2] != base+"/graphql" || urls[3] != base+"/playground" {
		t.Fatalf("printed %q, want URLs at %s (serve bound %s)", urls[0], base, addr)
	}
	req, _ := http.NewRequest(http.MethodPost, urls[2], strings.NewReader(`{"query":"{ viewer { role } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the printed GraphQL URL: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the printed GraphQL URL with the printed token: %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited with %d after shutdown: %s", code, errOut2.String())
	}
}

func TestHelpAndConfigErrors(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		vars     map[string]string
		wantCode int
		wantText string
	}{
		{"TopLevelHelp", []string{"help"}, nil, 0, "procsvc migrate"},
		{"DashDashHelp", []string{"--help"}, nil, 0, "procsvc member list"},
		{"DashH", []string{"-h"}, nil, 0, "procsvc token revoke"},
		{"GroupHelp", []string{"token", "--help"}, nil, 0, "procsvc token create"},
		{"HelpCommand", []string{"help", "member", "list"}, nil, 0, "-workspace"},
		{"ServeHelp", []string{"serve", "--help"}, nil, 0, "PROCSVC_ADDR"},
		{"MigrateHelp", []string{"migrate", "--help"}, nil, 0, "DATABASE_URL"},
		{"WorkspaceCreateHelp", []string{"workspace", "create", "--help"}, nil, 0, "-admin-email"},
		{"MemberAddHelp", []string{"member", "add", "--help"}, nil, 0, "-role"},
		{"TokenCreateHelp", []string{"token", "create", "--help"}, nil, 0, "-expires-in"},
		{"TokenRevokeHelp", []string{"token", "revoke", "--help"}, nil, 0, "-id"},
		{"TokenListHelp", []string{"token", "list", "--help"}, nil, 0, "-workspace"},
		{"UnknownCommand", []string{"frobnicate"}, nil, 2, "unknown command"},
		{"MissingSubcommand", []string{"token"}, nil, 2, "missing subcommand"},
		{"BadLogFormat", []string{"serve", "--log-format", "xml"}, nil, 2, "--log-format"},
		{"BadEnvDuration", []string{"serve"}, map[string]string{"PROCSVC_SHUTDOWN_TIMEOUT": "soon"}, 2, "PROCSVC_SHUTDOWN_TIMEOUT"},
		{"BadPoolSize", []string{"serve", "--db-max-conns", "-3"}, nil, 2, "PROCSVC_DB_MAX_CONNS"},
		{"UnknownFlag", []string{"serve", "--nope"}, nil, 2, "flag provided but not defined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := cli.Run(context.Background(), tc.args, env(tc.vars, &out, &errOut))
			all := out.String() + errOut.String()
			if code != tc.wantCode || !strings.Contains(all, tc.wantText) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tc.wantCode, tc.wantText, all)
			}
		})
	}
}

// TestHelpListsNoLoadTools: the load tools are procsvc-bench's commands,
// not the server's.
func TestHelpListsNoLoadTools(t *testing.T) {
	var out, errOut syncBuffer
	if code := cli.Run(context.Background(), []string{"help"}, env(nil, &out, &errOut)); code != 0 {
		t.Fatalf("help exited %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "bench") {
		t.Fatalf("procsvc help lists the load tools:\n%s", out.String())
	}
	if code := cli.Run(context.Background(), []string{"bench", "seed"}, env(nil, &out, &errOut)); code != 2 {
		t.Fatalf("procsvc bench seed exited %d, want 2 (unknown command)", code)
	}
}

// TestOperatorCommands walks workspace create → member add → token create →
// token list → token revoke on one SQLite file.
func TestOperatorCommands(t *testing.T) {
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "ops.db")
	run := func(args ...string) (string, int) {
		var out, errOut syncBuffer
		code := cli.Run(context.Background(), append(args, "--database-url", dbURL), env(nil, &out, &errOut))
		return out.String() + errOut.String(), code
	}
	field := func(text, name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(\S+)`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in:\n%s", name, text)
		}
		return m[1]
	}
	text, code := run("workspace", "create", "--name", "Ops", "--key", "OPS", "--admin-email", "ops@example.com")
	if code != 0 {
		t.Fatalf("workspace create: %d\n%s", code, text)
	}
	ws := field(text, "workspace")
	checksummed(t, "workspace create", field(text, "token"))
	if _, code := run("workspace", "create", "--name", "Bad", "--key", "x1", "--admin-email", "nope"); code != 1 {
		t.Fatalf("invalid workspace accepted")
	}
	text, code = run("member", "add", "--workspace", ws, "--name", "Bo", "--email", "bo@example.com", "--role", "viewer")
	if code != 0 || !strings.Contains(text, "VIEWER") {
		t.Fatalf("member add: %d\n%s", code, text)
	}
	member := field(text, "member")
	if text, code := run("member", "add", "--workspace", ws, "--name", "Bo", "--email", "bo@example.com"); code != 1 || !strings.Contains(text, "already exists") {
		t.Fatalf("duplicate member: %d\n%s", code, text)
	}
	text, code = run("token", "create", "--workspace", ws, "--member", member, "--name", "ci", "--expires-in", "30d")
	if code != 0 || !strings.Contains(text, "pms_") {
		t.Fatalf("token create: %d\n%s", code, text)
	}
	token := field(text, "token")
	checksummed(t, "token create", field(text, "secret"))
	text, code = run("token", "list", "--workspace", ws)
	if code != 0 || !strings.Contains(text, token) || strings.Contains(text, "pms_") {
		t.Fatalf("token list: %d\n%s", code, text)
	}
	// --expires-in 30d: the token expires 30 days after it was created
	// (give or take the moments between the two clocks' readings).
	row := regexp.MustCompile(`(?m)^` + token + `\s+\S+\s+ci\s+(\S+)\s+(\S+)`).FindStringSubmatch(text)
	if row == nil {
		t.Fatalf("no row for token %s in:\n%s", token, text)
	}
	created, err1 := timefmt.Parse(row[1])
	expires, err2 := timefmt.Parse(row[2])
	if lifetime := expires.Sub(created); err1 != nil || err2 != nil || lifetime < 30*24*time.Hour-time.Minute || lifetime > 30*24*time.Hour+time.Minute {
		t.Fatalf("--expires-in 30d: created %s, expires %s (%v, %v); want 30 days apart", row[1], row[2], err1, err2)
	}
	if text, code = run("member", "list", "--workspace", ws); code != 0 || !regexp.MustCompile(`(?m)^`+member+`\s+Bo\s+bo@example.com\s+VIEWER$`).MatchString(text) {
		t.Fatalf("member list: %d\n%s", code, text)
	}
	if text, code = run("token", "revoke", "--workspace", ws, "--id", token); code != 0 || !strings.Contains(text, "revoked") {
		t.Fatalf("token revoke: %d\n%s", code, text)
	}
	if text, code = run("token", "revoke", "--workspace", "not-an-id", "--id", token); code != 1 {
		t.Fatalf("revoke in a bad workspace: %d\n%s", code, text)
	}
	if text, code = run("migrate"); code != 0 || !strings.Contains(text, "up to date") {
		t.Fatalf("migrate: %d\n%s", code, text)
	}
}

// checksummed fails unless secret, printed by what, is of the format
// auth.NewSecret makes, checksum included.
func checksummed(t *testing.T, what, secret string) {
	t.Helper()
	if len(secret) != auth.SecretLen || !strings.HasPrefix(secret, auth.SecretPrefix) || auth.BadChecksum(secret) {
		t.Fatalf("%s printed %q, not a checksummed secret", what, secret)
	}
}

// TestServeLimitsFailedAuthentications: serve applies
// PROCSVC_AUTH_FAILURE_RATE and _BURST: past the burst of failures, a
// client address is refused 429 with Retry-After, a valid token too; the
// token it printed is checksummed.
func TestServeLimitsFailedAuthentications(t *testing.T) {
	var out, errOut syncBuffer
	ready := make(chan string, 1)
	e := env(map[string]string{"DATABASE_URL": "sqlite://" + filepath.Join(t.TempDir(), "procsvc.db"), "PROCSVC_ADDR": "127.0.0.1:0",
		// One failure back every 1000 s: none while the test runs.
		"PROCSVC_AUTH_FAILURE_RATE": "0.001", "PROCSVC_AUTH_FAILURE_BURST": "3"}, &out, &errOut)
	e.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, []string{"serve"}, e) }()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("serve exited with %d: %s", code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	m := tokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no token printed; stdout:\n%s", out.String())
	}
	checksummed(t, "serve", m[1])
	get := func(secret string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/projects", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get(m[1]); resp.StatusCode != http.StatusOK {
		t.Fatalf("the printed token: %d", resp.StatusCode)
	}
	for i := range 3 {
		if resp := get(auth.SecretPrefix + strings.Repeat("x", 43)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	// Retry-After: the 1000 s one failure takes to come back, less the
	// moments the requests took.
	resp := get(m[1])
	if retry, err := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || err != nil || retry < 900 || retry > 1000 {
		t.Fatalf("past the burst: %d, Retry-After %q; want 429, about 1000", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited with %d after shutdown: %s", code, errOut.String())
	}
}

// TestPlaygroundInRealBrowser boots procsvc as the README does and drives its
// /playground in headless Chromium: the token goes into the headers editor,
// the starter query runs, the result shows data, a subscription shows an
// event, a disconnected token's reason shows, and no request leaves the
// origin. Skipped without a browser, except under CI, where
// .ci/browser-test.sh installs one and a skip would hide a regression.
func TestPlaygroundInRealBrowser(t *testing.T) {
	if ok, why := browsertest.BrowserAvailable(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the playground browser test cannot run under CI: %s (run bash .ci/browser-test.sh)", why)
		}
		t.Skipf("no browser: %s (bash .ci/browser-test.sh installs one)", why)
	}
	base, out := startServe(t, "serve", "sqlite://"+filepath.Join(t.TempDir(), "procsvc.db"))
	m := tokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no token printed:\n%s", out.String())
	}
	shot := filepath.Join(browsertest.ScreenshotDir(t), "procsvc-playground.png")
	bctx, bcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer bcancel()
	if err := browsertest.RunBrowserTest(bctx, base, m[1], shot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
	// The same page runs a subscription over a same-origin WebSocket and
	// shows the event of a write made meanwhile (web/e2e/subscription.test.mjs).
	subShot := strings.TrimSuffix(shot, ".png") + "-subscription.png"
	if err := browsertest.RunSubscriptionBrowserTest(bctx, base, m[1], subShot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", subShot)
	// A revoked, an expired and a removed member's token: the playground
	// says which (web/e2e/refusal.test.mjs). The printed token is an admin's.
	refusalShot := strings.TrimSuffix(shot, ".png") + "-refusal.png"
	if err := browsertest.RunRefusalBrowserTest(bctx, base, m[1], refusalShot); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", refusalShot)
}
