package main

import (
	"errors"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/config"
)

// The docs give numbers next to the names that hold them: "the newest 20
// comments (`limits.EmbeddedComments`)", "16 MiB per replica
// (`--document-cache-mb`)". These tests hold each such number to the code,
// so that changing a constant or a default fails here until the docs say
// the new figure.

// sizeUnits are the units a figure may carry, in the bytes they stand for.
var sizeUnits = map[string]float64{"": 1, "bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

// figure is a number as the docs write it: digits with thin or plain spaces
// between thousands, an optional fraction, an optional size unit.
const figure = `([0-9][0-9   ]*(?:\.[0-9]+)?)(?: ?(KiB|MiB|GiB|bytes|B)\b)?`

// figureValue reads a figure's number and unit as a count (bytes for a
// size).
func figureValue(number, unit string) (float64, bool) {
	n, err := strconv.ParseFloat(strings.NewReplacer(" ", "", " ", "", " ", "").Replace(strings.TrimSpace(number)), 64)
	if err != nil {
		return 0, false
	}
	return n * sizeUnits[unit], true
}

// prose returns a doc's text with each paragraph on one line, so that a
// figure and its name are found together when a line break falls between
// them.
func prose(text string) string {
	return regexp.MustCompile(`([^\n])\n([ \t]*[^\n \t|#>-])`).ReplaceAllString(text, "$1 $2")
}

// constants returns the numeric constants of every package of the module
// (not ent's generated code), by "package.Name", with the value they
// evaluate to where they do not depend on another package.
func constants(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	dirs := map[string][]string{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" || p == filepath.Join(repoRoot, "ent")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dirs[filepath.Dir(p)] = append(dirs[filepath.Dir(p)], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, files := range dirs {
		fset := token.NewFileSet()
		var parsed []*ast.File
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, file)
		}
		// Other packages are not loaded: a constant built from another
		// package's has no value here and is skipped, the rest are
		// evaluated exactly as the compiler would.
		conf := types.Config{Importer: refusingImporter{}, Error: func(error) {}}
		pkg, _ := conf.Check(parsed[0].Name.Name, fset, parsed, nil)
		if pkg == nil {
			continue
		}
		for _, name := range pkg.Scope().Names() {
			c, ok := pkg.Scope().Lookup(name).(*types.Const)
			if !ok || c.Val().Kind() == constant.Unknown {
				continue
			}
			if v, ok := constant.Float64Val(constant.ToFloat(c.Val())); ok {
				out[pkg.Name()+"."+name] = v
			}
		}
	}
	return out
}

type refusingImporter struct{}

func (refusingImporter) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	return nil, errors.New("not loaded")
}

// TestDocsGiveConstantsTheirValues: a figure written just before a
// constant's name — "most 4 KiB (`idempotency.MaxStoredRefusal`" — is the
// constant's value.
func TestDocsGiveConstantsTheirValues(t *testing.T) {
	values := constants(t)
	if len(values) < 50 {
		t.Fatalf("found only %d constants; the scan is broken", len(values))
	}
	claim := regexp.MustCompile(figure + "[^`0-9.;|]{0,30}\\(`([a-z][a-z0-9]*\\.[A-Z][A-Za-z0-9_]*)`")
	checked := 0
	for path, text := range docs(t) {
		if path == filepath.Join("docs", "performance-history.md") {
			continue
		}
		for _, m := range claim.FindAllStringSubmatch(prose(text), -1) {
			want, ok := values[m[3]]
			if !ok {
				continue // not a numeric constant of ours
			}
			got, ok := figureValue(m[1], m[2])
			if !ok {
				continue
			}
			checked++
			if got != want {
				t.Errorf("%s: %q gives %s as %v, the code's is %v", path, m[0], m[3], got, want)
			}
		}
	}
	t.Logf("%d figures beside constants checked", checked)
	if checked < 3 {
		t.Errorf("only %d figures beside constants were found; the docs' pattern changed or the scan is broken", checked)
	}
}

// TestDocsGiveFlagsTheirDefaults: a figure written beside a serve flag —
// "16 MiB per replica (`--document-cache-mb`)" or "`--webhook-memory-mb`
// (64 MiB)" — is the flag's default, in the flag's unit.
func TestDocsGiveFlagsTheirDefaults(t *testing.T) {
	var c config.Config
	fset, _ := c.FlagSet("serve", io.Discard)
	before := regexp.MustCompile(figure + "[^`0-9.;|()]{0,30}\\(`--([a-z0-9-]+)`\\)")
	// "a quarter of `--x` (16 MiB)" gives a share of the flag, not its default.
	after := regexp.MustCompile("(\\bof )?`--([a-z0-9-]+)` \\(" + figure + "\\)")
	checked := 0
	check := func(path, claim, name, number, unit string) {
		f := fset.Lookup(name)
		if f == nil {
			t.Errorf("%s: %q names --%s, which serve does not take", path, claim, name)
			return
		}
		def, err := strconv.ParseFloat(f.DefValue, 64)
		if err != nil {
			return // not a number (a duration's default is checked by TestReadmeSettings)
		}
		got, ok := figureValue(number, unit)
		if !ok {
			return
		}
		// A flag counts in its unit: --x-mb in MiB.
		if strings.HasSuffix(name, "-mb") {
			if unit == "" {
				got *= 1 << 20
			}
			def *= 1 << 20
		}
		checked++
		if math.Abs(got-def) > 1e-9 {
			t.Errorf("%s: %q gives --%s's default as %s%s, the flag's is %s", path, claim, name, number, unit, f.DefValue)
		}
	}
	for path, text := range docs(t) {
		if path == filepath.Join("docs", "performance-history.md") || path == filepath.Join("docs", "performance.md") {
			continue // measurements name flags with the values they were run at
		}
		text = prose(text)
		for _, m := range before.FindAllStringSubmatch(text, -1) {
			check(path, m[0], m[3], m[1], m[2])
		}
		for _, m := range after.FindAllStringSubmatch(text, -1) {
			if m[1] == "" {
				check(path, m[0], m[2], m[3], m[4])
			}
		}
	}
	t.Logf("%d figures beside flags checked", checked)
	if checked < 3 {
		t.Errorf("only %d figures beside flags were found; the docs' pattern changed or the scan is broken", checked)
	}
}

// TestDocsNameFunctionsWhereTheyAre: wherever the docs write a file and, right
// after it, a name — "`internal/core/procedure_list.go` `FindProcedures`", as
// design.md's walks through a request do — the file declares that name.
func TestDocsNameFunctionsWhereTheyAre(t *testing.T) {
	pair := regexp.MustCompile("`((?:internal|graph|rest|cmd|bench)/[A-Za-z0-9_./-]+\\.go)` `([A-Za-z_][A-Za-z0-9_]*)`")
	checked := 0
	for path, text := range docs(t) {
		if path == filepath.Join("docs", "performance-history.md") {
			continue
		}
		for _, m := range pair.FindAllStringSubmatch(prose(text), -1) {
			checked++
			b, err := os.ReadFile(filepath.Join(repoRoot, m[1]))
			if err != nil {
				t.Errorf("%s: %q names %s, which cannot be read: %v", path, m[0], m[1], err)
				continue
			}
			decl := regexp.MustCompile(`(?m)^(?:func|type|var|const)\s+(?:\([^)]*\)\s*)?` + m[2] + `\b|^\s+` + m[2] + `\s+(?:=|[A-Za-z*\[])`)
			if !decl.Match(b) {
				t.Errorf("%s: %q: %s declares no %s", path, m[0], m[1], m[2])
			}
		}
	}
	t.Logf("%d file-and-name pairs checked", checked)
	if checked < 5 {
		t.Errorf("only %d file-and-name pairs were found; design.md's walks should name several", checked)
	}
}
