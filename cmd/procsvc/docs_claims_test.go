package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/config"
)

// The docs name tests, files and settings; these tests hold every such
// name to the code, so that a renamed test, a moved file or a changed
// default fails here rather than leaving the docs wrong.

// repoRoot is the repository, two levels above this package.
const repoRoot = "../.."

// docs returns README.md and every docs/*.md, by path.
func docs(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range append(paths, filepath.Join(repoRoot, "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		out[rel] = string(b)
	}
	return out
}

// testFuncs returns the names of every test, benchmark and fuzz target in
// the repository's _test.go files.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z0-9]\w*)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDocsNameTestsThatExist: every test, benchmark and fuzz target the docs
// name (`TestX`, `pkg.TestX/Subtest`, `BenchmarkX{A,B}` for both) exists.
func TestDocsNameTestsThatExist(t *testing.T) {
	have := testFuncs(t)
	named := regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z0-9][A-Za-z0-9_]*(?:\{[A-Za-z0-9_,]+\}[A-Za-z0-9_]*)?`)
	for path, text := range docs(t) {
		for _, name := range named.FindAllString(text, -1) {
			for _, n := range expandBraces(name) {
				if !have[n] {
					t.Errorf("%s names %s, which no _test.go declares", path, n)
				}
			}
		}
	}
}

// expandBraces expands one {A,B} group: X{A,B}Y is XAY and XBY.
func expandBraces(s string) []string {
	i, j := strings.IndexByte(s, '{'), strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, s[:i]+alt+s[j+1:])
	}
	return out
}

// TestDocsNameFilesThatExist: every repository path the docs name in
// backticks (internal/core/changelog.go, graph/live/, docs/api.md) exists,
// and every package-qualified name (internal/core.TestAccessVersion,
// internal/memory.Budget, graph/live.TestX/Subtest) is declared in that
// package: a test cited under the wrong package fails here.
// docs/performance-history.md is the record of earlier layouts, and names
// files as they were then.
func TestDocsNameFilesThatExist(t *testing.T) {
	path := regexp.MustCompile("`((?:internal|graph|rest|cmd|bench|docs|ent|web|tools|\\.ci)/[A-Za-z0-9_./-]*)`")
	qualified := regexp.MustCompile(`^((?:[a-z0-9_]+/)*[a-z0-9_]+)\.([A-Z][A-Za-z0-9_]*)(?:/.*)?$`)
	for doc, text := range docs(t) {
		if doc == filepath.Join("docs", "performance-history.md") {
			continue
		}
		for _, m := range path.FindAllStringSubmatch(text, -1) {
			p := strings.TrimSuffix(m[1], "/")
			if strings.Contains(p, "node_modules") {
				continue // made by npm ci
			}
			if q := qualified.FindStringSubmatch(p); q != nil {
				if !declares(t, q[1], q[2]) {
					t.Errorf("%s names %s: package %s declares no %s", doc, m[1], q[1], q[2])
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}

// declares reports whether the Go package in directory dir declares name
// at its top level (a function, type, variable or constant), in a test
// file or not.
func declares(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.go"))
	if err != nil || len(files) == 0 {
		return false
	}
	decl := regexp.MustCompile(`(?m)^(?:func|type|var|const)\s+(?:\([^)]*\)\s*)?` + name + `\b|^\s+` + name + `\s+(?:=|[A-Za-z*\[])`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if decl.Match(b) {
			return true
		}
	}
	return false
}

// TestReadmeSettings: the README's table of settings has a row for every
// flag of serve, with the flag's environment variable and, where the row
// gives one in backticks, its default.
func TestReadmeSettings(t *testing.T) {
	readme := docs(t)["README.md"]
	row := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| `([A-Z0-9_]+)` \\| ([^|]*)\\|")
	rows := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(readme, -1) {
		rows[m[1]] = []string{m[2], strings.TrimSpace(m[3])}
	}
	var c config.Config
	fset, _ := c.FlagSet("serve", io.Discard)
	fset.VisitAll(func(f *flag.Flag) {
		r, ok := rows[f.Name]
		if !ok {
			t.Errorf("the README's settings have no row for --%s", f.Name)
			return
		}
		env, def := r[0], r[1]
		if err := envSets(f.Name, env); err != nil {
			t.Errorf("--%s: the README names %s: %v", f.Name, env, err)
		}
		if strings.HasPrefix(def, "`") && strings.HasSuffix(def, "`") && !strings.HasPrefix(def, "`--") {
			// A default applied after parsing (the database URL's) is
			// named in the flag's usage.
			if want := strings.Trim(def, "`"); !sameDefault(want, f.DefValue) && !(f.DefValue == "" && strings.Contains(f.Usage, want)) {
				t.Errorf("--%s: the README gives the default %s, the flag's is %q", f.Name, want, f.DefValue)
			}
		}
	})
	for name := range rows {
		if fset.Lookup(name) == nil {
			t.Errorf("the README's settings have a row for --%s, which serve does not take", name)
		}
	}
}

// envSets reports whether environment variable env sets serve's flag name:
// applied alone, it changes the flag's value to one probe value of the
// flag's type.
func envSets(name, env string) error {
	var c config.Config
	fset, applyEnv := c.FlagSet("serve", io.Discard)
	f := fset.Lookup(name)
	var probes []string
	getter, _ := f.Value.(flag.Getter)
	switch v := getter.(type) {
	case nil:
		// Lists of their own syntax: one of these parses.
		probes = []string{"probe.example", "00000000-0000-0000-0000-000000000001=1/1"}
	default:
		switch v := v.Get().(type) {
		case bool:
			probes = []string{fmt.Sprint(!v)}
		case int:
			probes = []string{fmt.Sprint(v + 7)}
		case float64:
			probes = []string{fmt.Sprint(v + 7.5)}
		case time.Duration:
			probes = []string{(v + 7*time.Second).String()}
		default:
			probes = []string{"probe.example"}
		}
	}
	for _, probe := range probes {
		_ = applyEnv(func(k string) string {
			if k == env {
				return probe
			}
			return ""
		})
		if f.Value.String() != f.DefValue {
			return nil
		}
	}
	if getter == nil && f.DefValue == "" && fmt.Sprintf("%T", f.Value) == "flag.funcValue" {
		return nil // flag.Func's value never shows what it was set to
	}
	return fmt.Errorf("setting it to %q left the flag at %q", probes, f.Value.String())
}

// sameDefault compares a default as the README writes it with the flag's.
func sameDefault(readme, flag string) bool {
	if readme == flag {
		return true
	}
	a, errA := time.ParseDuration(readme)
	b, errB := time.ParseDuration(flag)
	return errA == nil && errB == nil && a == b
}

// TestDocsGiveTheLimitsTheCodeHas: wherever the docs give the depth, the
// complexity or the token limit of a GraphQL request as a number, it is the
// code's (design.md once said complexity ≤ 2 000 while the code said 2 500).
func TestDocsGiveTheLimitsTheCodeHas(t *testing.T) {
	limits := []struct {
		what  string
		claim *regexp.Regexp
		value int
	}{
		{"complexity", regexp.MustCompile(`(?i)complexity(?: limit)? ?(?:(?:≤|<=) ?([0-9][0-9  ]*[0-9])\b|\(([0-9][0-9  ]*[0-9])\))`), gqlhttp.MaxComplexity},
		{"depth", regexp.MustCompile(`(?i)\bdepth(?: limit)? ?(?:(?:≤|<=) ?([0-9]+)\b|\(([0-9]+)\))`), gqlhttp.MaxDepth},
		{"tokens", regexp.MustCompile(`(?i)document[^.|]{0,40}?\b([0-9][0-9  ]*[0-9]) tokens\b`), gqlhttp.MaxTokens},
	}
	for path, text := range docs(t) {
		if path == filepath.Join("docs", "performance-history.md") {
			continue
		}
		for _, l := range limits {
			for _, m := range l.claim.FindAllStringSubmatch(text, -1) {
				n, err := strconv.Atoi(strings.NewReplacer(" ", "", " ", "").Replace(strings.Join(m[1:], "")))
				if err == nil && n != l.value {
					t.Errorf("%s: %q gives the %s limit as %d, the code's is %d", path, m[0], l.what, n, l.value)
				}
			}
		}
	}
}

// TestReadmeLayoutNamesEveryPackage: the README's Layout names every
// package directory of internal/, graph/ and cmd/ (a newcomer reads it to
// find where a thing lives).
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	readme := docs(t)["README.md"]
	i := strings.Index(readme, "## Layout")
	if i < 0 {
		t.Fatal("the README has no Layout section")
	}
	layout := readme[i:]
	if j := strings.Index(layout[len("## Layout"):], "\n## "); j >= 0 {
		layout = layout[:len("## Layout")+j]
	}
	for _, parent := range []string{"internal", "graph", "cmd"} {
		dirs, err := os.ReadDir(filepath.Join(repoRoot, parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if !d.IsDir() || d.Name() == "generated" {
				continue
			}
			name := parent + "/" + d.Name()
			if !regexp.MustCompile(regexp.QuoteMeta(name) + `\b`).MatchString(layout) {
				t.Errorf("the README's Layout does not name %s", name)
			}
		}
	}
}
