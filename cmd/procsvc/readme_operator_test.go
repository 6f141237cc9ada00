package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestReadmeOperatorBlocks runs the README's blocks marked
// <!-- readme-test: operator --> (backing up, restoring, moving to
// PostgreSQL, exporting a workspace) verbatim, in order, in one bash session,
// as an operator would: with the procsvc binary on PATH, in a directory whose
// data/procsvc.db a running server is serving (the backup is taken online;
// localhost:8080 is that server, PROCSVC_TOKEN the token it printed),
// and with PG_URL and RESTORED_URL naming empty PostgreSQL databases of the
// test's own (the README's defaults are the operator's). A command that
// fails fails the test, and the commands verify their own work (backup and
// restore check the file, copy ends with its verification), so the README's
// commands cannot drift from the binary's.
func TestReadmeOperatorBlocks(t *testing.T) {
	for _, tool := range []string{"bash", "go", "pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required to run the README's operator examples: %v", tool, err)
			}
			t.Skipf("%s not installed: the README's operator examples need it", tool)
		}
	}
	dbtest.NeedPostgres(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readmeBlocks(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	var operator []*readmeBlock
	for _, b := range blocks {
		if b.directive == "operator" {
			if b.lang != "sh" {
				t.Fatalf("README.md:%d: an operator block is a sh block", b.line)
			}
			operator = append(operator, b)
		}
	}
	if len(operator) == 0 {
		t.Fatal("no block of the README is marked <!-- readme-test: operator -->")
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "procsvc"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The operator's directory: the default database, served while the
	// blocks run.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	base, out := startServe(t, "the operator's server", "sqlite://"+filepath.Join(dir, "data", "procsvc.db"))
	token := tokenLine.FindStringSubmatch(out.String())
	if token == nil {
		t.Fatalf("serve printed no token; stdout:\n%s", out.String())
	}
	sh := startShell(t, dir, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PROCSVC_TOKEN="+token[1], "PG_URL="+dbtest.CreatePostgres(t), "RESTORED_URL="+dbtest.CreatePostgres(t))
	for _, b := range operator {
		// The README's server is the test's.
		script := strings.ReplaceAll(b.body, "http://localhost:8080", base)
		got := sh.run("README.md:"+strconv.Itoa(b.line), script)
		t.Logf("README.md:%d:\n%s", b.line, strings.TrimSpace(string(got)))
	}
}
