package rest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph"
)

// TestRESTReachesDataOnlyThroughTheResolvers holds the product's design
// (docs/design.md §1): REST is one hop from the GraphQL resolvers, never
// beside them. The API holds the resolver and nothing else that reads or
// writes, and no handler names the core's Service, an ent client or
// transaction, or the database, so a REST route cannot grow a data path
// GraphQL does not share.
func TestRESTReachesDataOnlyThroughTheResolvers(t *testing.T) {
	api := reflect.TypeOf(API{})
	resolvers := 0
	for i := range api.NumField() {
		f := api.Field(i)
		switch {
		case f.Type == reflect.TypeOf(&graph.Resolver{}):
			resolvers++
		case f.Type.String() == "*slog.Logger":
		default:
			t.Errorf("rest.API holds %s %s: REST reaches data only through *graph.Resolver", f.Name, f.Type)
		}
	}
	if resolvers != 1 {
		t.Errorf("rest.API holds %d resolvers, want 1", resolvers)
	}

	forbiddenImports := map[string]bool{
		"github.com/procsvc/procsvc/internal/database": true,
		"database/sql": true,
	}
	forbidden := map[string]map[string]bool{
		"core": {"Service": true, "New": true},
		"ent":  {"Client": true, "NewClient": true, "Tx": true, "Open": true},
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); forbiddenImports[p] {
				t.Errorf("%s imports %s: REST reaches data only through the resolvers", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && forbidden[pkg.Name][sel.Sel.Name] {
				t.Errorf("%s names %s.%s: REST reaches data only through the resolvers", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("read only %d of rest's files", checked)
	}
}
