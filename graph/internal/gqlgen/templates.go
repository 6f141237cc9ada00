package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/99designs/gqlgen/graphql"
)

// The rewrite depends on gqlgen's templates, which offer no hook for it: it
// edits the text they write, and inline.gotpl reproduces what some of them
// write. So that a gqlgen upgrade cannot change what the executor does
// behind the plugin's back, generation first checks that each template the
// plugin depends on is, to the byte, the one it was verified against, and
// fails naming the template otherwise. On such a failure: read the
// template's diff between the two gqlgen versions, adapt rewrite.go and
// inline.gotpl to it, run the tests of graph/... and then record the new
// sum here (`sha256sum $(go list -m -f '{{.Dir}}' github.com/99designs/gqlgen)/NAME`, NAME as listed below).

// verifiedVersion is the gqlgen release the templates were verified in.
const verifiedVersion = "v0.17.98"

// A verifiedTemplate is one gqlgen template the plugin depends on.
type verifiedTemplate struct {
	// name is the template's path in gqlgen's module.
	name string
	// sum is the SHA-256 of its text in verifiedVersion.
	sum string
	// why says what the plugin takes from it.
	why string
}

var verifiedTemplates = []verifiedTemplate{
	{"codegen/type.gotpl", "c18dbf7d3c51be519eaf5db43280409c27abc367a68ca9c642b71120b02e477b",
		"its list marshallers' call of graphql.MarshalSliceConcurrently, which the rewrite replaces"},
	{"codegen/object.gotpl", "0d247faea1bc26bf856c6b89a7adb556f4c471a903b6cecd654194140534c120",
		"its object marshallers, which inline.gotpl's replace and reproduce"},
	{"codegen/field.gotpl", "5d798a6fb94c8fbaa0b6a4ab04becac8d837fdaaabdf7e7668989ad394ccd837",
		"its field functions, which inline.gotpl calls for the fields it does not write itself"},
	{"codegen/internal!.gotpl", "f664fddc7495ff6ed85c13aac3f6d1db82d38ba643507bfc4c9c294a504f15b8",
		"Exec's marshalling of each operation's data, which the rewrite bounds"},
	// Not a template, but what the field functions run: the edges
	// inline.gotpl writes reproduce its answers (errors, nulls, panics).
	{"graphql/resolve_field.go", "fcd64cc0895aebdb6384deead9ecdffcb18e2f0afd76b017efe29218091d47c1",
		"resolveField's answers to an error, a nil result and a panic, which the written edges reproduce"},
}

// errTemplateChanged marks a failure caused by a gqlgen template that is not
// the one the plugin was verified against.
var errTemplateChanged = errors.New("a gqlgen template the plugin depends on has changed")

// templateChanged reports that template no longer writes what the rewrite
// expects; detail says what is missing.
func templateChanged(template, detail string) error {
	return fmt.Errorf("%w: gqlgen %s's %s (verified in %s): %s; see graph/internal/gqlgen/templates.go",
		errTemplateChanged, graphql.Version, template, verifiedVersion, detail)
}

// checkTemplates fails unless every template of verifiedTemplates under
// gqlgenDir (gqlgen's module directory) is the one verified.
func checkTemplates(gqlgenDir string) error {
	var errs []error
	for _, t := range verifiedTemplates {
		b, err := os.ReadFile(filepath.Join(gqlgenDir, filepath.FromSlash(t.name)))
		if err != nil {
			errs = append(errs, templateChanged(t.name, fmt.Sprintf("cannot read it (%v); the plugin takes %s", err, t.why)))
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != t.sum {
			errs = append(errs, templateChanged(t.name, fmt.Sprintf("its text changed (sha256 %s); the plugin takes %s", got, t.why)))
		}
	}
	return errors.Join(errs...)
}

// gqlgenDir is the directory of the gqlgen module this module builds with.
func gqlgenDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/99designs/gqlgen").Output()
	if err != nil {
		return "", fmt.Errorf("locating gqlgen's module (go list -m): %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("locating gqlgen's module: go list -m gave no directory (is it vendored?)")
	}
	return dir, nil
}
