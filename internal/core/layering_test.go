package core_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoHTTP: the core, and every package of this module it
// imports however indirectly, imports no HTTP package (docs/design.md §1):
// the faces and their middleware sit above the rules, never below them.
// A rule the core needs that an HTTP package also uses lives below both
// (internal/consistency's read-your-writes bookkeeping, database.TxStep for
// a keyed request's commit).
func TestCoreImportsNoHTTP(t *testing.T) {
	const module = "github.com/procsvc/procsvc/"
	// Each package the core depends on, with its direct imports.
	out, err := exec.Command("go", "list", "-deps",
		"-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`,
		module+"internal/core").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
				t.Errorf("%s (imported by internal/core) imports %s", strings.TrimPrefix(fields[0], module), imp)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("go list named %d packages of this module; want internal/core and what it imports", checked)
	}
}
