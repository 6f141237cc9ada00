package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docs/caching.md lists every cache a replica keeps, so that a newcomer
// finds each one, and what bounds and invalidates it, in one place. These
// tests hold the page to the code: a cache added without a row fails here.

// cachesRoot is the module, two levels above this package.
const cachesRoot = "../.."

// cacheLike matches the names of types, and of struct fields, that hold a
// cache (or per-call memo) by what they are called ("memory" is not a
// memo).
var cacheLike = regexp.MustCompile(`(?i)cache|lru|flight|memo([^r]|$)`)

// scalar reports whether e is a number, a string, a bool or a duration:
// a field of one (ResponseCacheMB, cacheable) is a setting or a flag
// about a cache, never one.
func scalar(e ast.Expr) bool {
	if id, ok := e.(*ast.Ident); ok {
		switch id.Name {
		case "bool", "string", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
			return true
		}
	}
	return typeName(e) == "time.Duration"
}

// cacheTypes are the types that keep values across calls, by package and
// name: a struct field of one (or of a pointer to one) is a cache whatever
// it is called.
var cacheTypes = map[string]bool{
	"lru.Cache": true, "lru.TwoQueueCache": true, "lru.ARCCache": true, "simplelru.LRU": true,
	"expirable.LRU": true, "sync.Map": true, "singleflight.Group": true, "list.List": true,
}

// cacheConstructors are the calls that make a cache: the file that calls
// one must be on the page.
var cacheConstructors = map[string]bool{
	"lru.New": true, "lru.NewWithEvict": true, "lru.New2Q": true, "lru.NewARC": true,
	"simplelru.NewLRU": true, "expirable.NewLRU": true,
}

// cacheFinding is one place in production code that looks like a cache:
// the file it is in and the type that holds it ("" for a constructor's
// call, which the file's row covers).
type cacheFinding struct {
	file, name, why string
}

// productionFiles returns the module's hand-written production Go files,
// relative to cachesRoot: not tests, not ent's generated code, not
// generated files (gqlgen's resolvers, hand-written bodies in generated
// files, are kept).
func productionFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(cachesRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cachesRoot, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" || rel == "ent") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// findCaches parses files (relative to root) and returns every type, and
// every struct field's holder, and every constructor's call, that looks
// like a cache.
func findCaches(t *testing.T, root string, files []string) []cacheFinding {
	t.Helper()
	var out []cacheFinding
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) && !strings.HasSuffix(rel, ".resolvers.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if cacheLike.MatchString(n.Name.Name) {
					out = append(out, cacheFinding{rel, n.Name.Name, "type name"})
				}
				if st, ok := n.Type.(*ast.StructType); ok {
					for _, field := range st.Fields.List {
						for _, name := range field.Names {
							if cacheLike.MatchString(name.Name) && !scalar(field.Type) {
								out = append(out, cacheFinding{rel, n.Name.Name, "field " + name.Name})
							}
						}
						if typ := typeName(field.Type); cacheTypes[typ] {
							out = append(out, cacheFinding{rel, n.Name.Name, "a field of type " + typ})
						}
					}
				}
			case *ast.CallExpr:
				if fn := typeName(n.Fun); cacheConstructors[fn] {
					out = append(out, cacheFinding{rel, "", "a call of " + fn})
				}
			}
			return true
		})
	}
	return out
}

// typeName is e's package-qualified name (pkg.Name), pointers and type
// arguments aside; "" when it is not one.
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok {
			return pkg.Name + "." + x.Sel.Name
		}
	}
	return ""
}

// unnamed returns the findings docs/caching.md does not name: its file's
// path, and its type's name in backquotes (alone, or qualified as in
// `pkg.Type` and `Type.field`).
func unnamed(page string, found []cacheFinding) []string {
	var out []string
	for _, c := range found {
		switch {
		case !strings.Contains(page, c.file):
			out = append(out, c.file+" ("+c.why+" in "+orFile(c.name)+"): its file is not on the page")
		case c.name != "" && !regexp.MustCompile("`(\\w+\\.)*"+regexp.QuoteMeta(c.name)+"(\\.\\w+)*`").MatchString(page):
			out = append(out, c.file+": type "+c.name+" ("+c.why+") is not named on the page")
		}
	}
	sort.Strings(out)
	return out
}

func orFile(name string) string {
	if name == "" {
		return "the file"
	}
	return name
}

// TestCachingPageNamesEveryCache: every type of production code that holds
// a cache (by its name, its fields' names, or a field of an LRU, a
// sync.Map and the like) and every file that builds an LRU is named on
// docs/caching.md.
func TestCachingPageNamesEveryCache(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(cachesRoot, "docs", "caching.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := findCaches(t, cachesRoot, productionFiles(t))
	if len(found) < 10 {
		t.Fatalf("found %d caches: the scan has gone blind", len(found))
	}
	for _, miss := range unnamed(string(page), found) {
		t.Errorf("docs/caching.md does not name a cache: %s", miss)
	}
}

// TestCacheScanFindsANewCache: the scan finds a cache type added to a
// package, by its name and by an LRU field, and the page must then name it.
func TestCacheScanFindsANewCache(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import lru "github.com/hashicorp/golang-lru/v2"

type answerMemo struct{ m map[string]int }

type holder struct{ byKey *lru.Cache[string, int] }

func newHolder() *holder { c, _ := lru.New[string, int](8); return &holder{byKey: c} }
`
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found := findCaches(t, dir, []string{"p/p.go"})
	if got := unnamed("", found); len(got) != 3 {
		t.Fatalf("unnamed on an empty page: %q, want the memo, the holder and the call", got)
	}
	if got := unnamed("`p/p.go` holds `answerMemo` and `holder`", found); len(got) != 0 {
		t.Fatalf("unnamed on a page naming both: %q", got)
	}
	if got := unnamed("`p/p.go` holds `answerMemo`", found); len(got) != 1 || !strings.Contains(got[0], "holder") {
		t.Fatalf("unnamed on a page naming the memo only: %q", got)
	}
}
