package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/cli"
)

// TestReadmeRunsInOrder follows README.md as a new user does, top to
// bottom, on a fresh server: its "serve" block starts procsvc on an empty
// SQLite database (in-process, on a free port instead of 8080), the export
// line it prints goes into one bash session, and every sh block runs in
// that session in order (localhost:8080 pointing at the test's server) and
// every graphql block's operations are sent as the playground sends them.
// An example fails the test when its shell fails, when it answers an
// error, GraphQL errors or an empty REST list, or when its answer differs
// from the json block the README shows after it. A block the test cannot
// run says why in a "readme-test: skip: …" comment above it. So the
// README's examples cannot drift from what the service does.
func TestReadmeRunsInOrder(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required to run the README's examples: %v", tool, err)
			}
			t.Skipf("%s not installed: the README's examples need it", tool)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readmeBlocks(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	r := &readmeRun{t: t, answers: map[string]any{}}
	var ran, skipped int
	for _, b := range blocks {
		if !b.runnable() {
			continue
		}
		where := fmt.Sprintf("README.md:%d", b.line)
		switch {
		case b.directive == "serve":
			r.serve(where)
		case b.directive == "operator":
			t.Logf("%s: run by TestReadmeOperatorBlocks (with the procsvc binary and PostgreSQL)", where)
			skipped++
			continue
		case strings.HasPrefix(b.directive, "skip:"):
			t.Logf("%s: skipped (%s)", where, strings.TrimSpace(strings.TrimPrefix(b.directive, "skip:")))
			skipped++
			continue
		case b.directive != "" && b.directive != "stream":
			t.Fatalf("%s: unknown readme-test directive %q", where, b.directive)
		case r.base == "":
			t.Fatalf("%s: an example before the README has started the server", where)
		case b.directive == "stream":
			r.stream(where, b)
		case b.lang == "sh":
			r.shell(where, b)
		case b.lang == "graphql":
			r.graphql(where, b)
		}
		ran++
	}
	if r.base == "" {
		t.Fatal("no block of the README is marked <!-- readme-test: serve -->")
	}
	t.Logf("ran %d of the README's blocks in order, skipped %d", ran, skipped)
}

// readmeRun is the state a reader builds while following the README: the
// server, the token it printed, the shell, the answers so far.
type readmeRun struct {
	t       *testing.T
	base    string // http://127.0.0.1:port
	token   string
	sh      *readmeShell
	answers map[string]any // data of each GraphQL operation run, by name
}

// serve starts procsvc as the README's first command does, on an empty
// database in a temporary directory, and opens the shell the reader pastes
// the printed export line into.
func (r *readmeRun) serve(where string) {
	t := r.t
	// The default's file, in a directory of the test's own (the default's
	// data/ is created by Open: internal/database's
	// TestOpenRefusesURLsItCannotServe).
	base, out := startServe(t, where, "sqlite://"+filepath.Join(t.TempDir(), "procsvc.db"))
	r.base = base
	var export string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "export PROCSVC_TOKEN=") {
			export = strings.TrimSpace(line)
		}
	}
	m := tokenLine.FindStringSubmatch(export)
	if m == nil {
		t.Fatalf("%s: serve printed no export line to paste; stdout:\n%s", where, out.String())
	}
	r.token = m[1]
	r.sh = startShell(t, t.TempDir())
	r.sh.run(where, export)
}

// startServe runs serve in-process on databaseURL and a free port until t
// ends, and returns its base URL and what it prints on stdout.
func startServe(t *testing.T, where, databaseURL string) (base string, stdout *syncBuffer) {
	return startServeWith(t, where, map[string]string{"DATABASE_URL": databaseURL})
}

// startServeWith is startServe with the environment vars (DATABASE_URL
// among them), on a free port.
func startServeWith(t *testing.T, where string, vars map[string]string) (base string, stdout *syncBuffer) {
	var out, errOut syncBuffer
	ready := make(chan string, 1)
	all := map[string]string{"PROCSVC_ADDR": "127.0.0.1:0"}
	maps.Copy(all, vars)
	e := env(all, &out, &errOut)
	e.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, nil, e) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s: the server did not stop", where)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr, &out
	case code := <-done:
		t.Fatalf("%s: serve exited with %d: %s", where, code, errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: serve did not start", where)
	}
	return "", nil
}

// local points the README's URLs at the test's server.
func (r *readmeRun) local(text string) string {
	return strings.ReplaceAll(text, "http://localhost:8080", r.base)
}

// shell runs an sh block in the reader's shell and checks its answers.
func (r *readmeRun) shell(where string, b *readmeBlock) {
	out := r.sh.run(where, r.local(b.body))
	values, err := jsonValues(out)
	if err != nil {
		r.t.Fatalf("%s: %v:\n%s", where, err, out)
	}
	for _, v := range values {
		if p := problem(v); p != "" {
			r.t.Fatalf("%s: the example answered %s", where, p)
		}
	}
	if b.want == nil {
		return
	}
	want, err := jsonValues([]byte(b.want.body))
	if err != nil {
		r.t.Fatalf("README.md:%d: %v", b.want.line, err)
	}
	if len(values) != len(want) {
		r.t.Fatalf("%s: %d answers, the README shows %d:\n%s", where, len(values), len(want), out)
	}
	for i := range want {
		if d := matchesShown(values[i], want[i], "answer"); d != "" {
			r.t.Fatalf("%s: %s", where, d)
		}
	}
}

// stream runs an sh block that streams until stopped (a subscription over
// Server-Sent Events) beside the session, changes a procedure as the README
// suggests until the stream shows the change's event, then stops it.
func (r *readmeRun) stream(where string, b *readmeBlock) {
	t := r.t
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", r.local(b.body))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PROCSVC_TOKEN=" + r.token}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data:") {
				events <- line
			}
		}
	}()
	deadline := time.After(30 * time.Second)
	change := time.NewTicker(250 * time.Millisecond)
	defer change.Stop()
	for i := 0; ; i++ {
		select {
		case line, ok := <-events:
			if !ok {
				t.Fatalf("%s: the stream ended without an event", where)
			}
			if !strings.Contains(line, `"procedureEvents"`) || strings.Contains(line, `"errors"`) {
				t.Fatalf("%s: the stream sent %s", where, line)
			}
			return
		case <-change.C:
			// Until the subscription listens, a change has no event:
			// change the demo procedure again, as a reader would.
			r.rest(where, http.MethodPut, "/procedures/PRC-1", fmt.Sprintf(`{"displayVideo": %t}`, i%2 == 0))
		case <-deadline:
			t.Fatalf("%s: no event within 30 s of changing PRC-1", where)
		}
	}
}

// rest sends a REST request as the reader's token and fails the test on
// an error answer.
func (r *readmeRun) rest(where, method, path, body string) {
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", where, method, path, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("%s: %s %s answered %d %s", where, method, path, resp.StatusCode, raw)
	}
}

// graphql sends each operation of a graphql block, the whole block as the
// document and the operation's name, as the playground does. Subscriptions
// are not run here (they stream until stopped; internal/server's live tests
// run them).
func (r *readmeRun) graphql(where string, b *readmeBlock) {
	ops, err := graphqlOperations(b.body)
	if err != nil {
		r.t.Fatalf("%s: %v", where, err)
	}
	for _, op := range ops {
		if op.kind == "subscription" {
			r.t.Logf("%s: subscription %q not run here (it streams; the README's SSE example and internal/server's live tests run subscriptions)", where, op.name)
			continue
		}
		vars := json.RawMessage("{}")
		if op.variables != "" {
			filled, err := fillVariables(op.variables, r.answers)
			if err != nil {
				r.t.Fatalf("%s: %s's variables: %v", where, op.name, err)
			}
			if !json.Valid([]byte(filled)) {
				r.t.Fatalf("%s: %s's variables are not JSON: %s", where, op.name, filled)
			}
			vars = json.RawMessage(filled)
		}
		request := map[string]any{"query": b.body, "variables": vars}
		if op.name != "" {
			request["operationName"] = op.name
		}
		body, _ := json.Marshal(request)
		req, _ := http.NewRequest(http.MethodPost, r.base+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+r.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			r.t.Fatalf("%s: %s: %v", where, op.name, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		values, err := jsonValues(raw)
		if err != nil || len(values) != 1 {
			r.t.Fatalf("%s: %s answered %d %s", where, op.name, resp.StatusCode, raw)
		}
		if p := problem(values[0]); p != "" || resp.StatusCode != http.StatusOK {
			r.t.Fatalf("%s: %s answered %d, %s", where, op.name, resp.StatusCode, raw)
		}
		data, _ := values[0].(map[string]any)["data"].(map[string]any)
		for field, v := range data {
			// A top-level list the README filters must find something:
			// an example that shows nothing no longer says what it did.
			if c, ok := v.(map[string]any); ok && fmt.Sprint(c["totalCount"]) == "0" {
				r.t.Fatalf("%s: %s: %s is empty: %s", where, op.name, field, raw)
			}
		}
		r.answers[op.name] = data
	}
}

// readmeShell is one bash session fed the README's blocks in order, as a
// reader pastes them into one terminal: variables and functions of a
// block are there for the next.
type readmeShell struct {
	t      *testing.T
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *syncBuffer
	n      int
}

// startShell starts the session in dir with PATH, HOME (dir) and LANG, or
// the variables given (NAME=value) instead of PATH.
func startShell(t *testing.T, dir string, vars ...string) *readmeShell {
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	if len(vars) == 0 {
		vars = []string{"PATH=" + os.Getenv("PATH")}
	}
	cmd.Env = append([]string{"HOME=" + dir, "LANG=C.UTF-8"}, vars...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	return &readmeShell{t: t, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &stderr}
}

// run pastes script and returns what it printed; a command of it that
// fails (or a pipeline's, with pipefail) fails the test.
func (s *readmeShell) run(where, script string) []byte {
	s.n++
	end := fmt.Sprintf("readme-test-end-%d", s.n)
	// A subshell-free "set -e" would end the session; instead each
	// command's status is checked by the ERR trap, which names it.
	fmt.Fprintf(s.stdin, "set -o pipefail; __failed=0; trap '__failed=1; echo \"failed: $BASH_COMMAND\" >&2' ERR\n%s\ntrap - ERR\nprintf '\\n%s %%s\\n' \"$__failed\"\n", script, end)
	var out bytes.Buffer
	for {
		line, err := s.stdout.ReadString('\n')
		if err != nil {
			s.t.Fatalf("%s: the shell ended (%v); stderr:\n%s", where, err, s.stderr.String())
		}
		if rest, ok := strings.CutPrefix(line, end+" "); ok {
			if strings.TrimSpace(rest) != "0" {
				s.t.Fatalf("%s: a command failed; output:\n%s\nstderr:\n%s", where, out.String(), s.stderr.String())
			}
			// The newline printed before the marker is ours.
			return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
		}
		out.WriteString(line)
	}
}
