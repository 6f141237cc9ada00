// Command gqlgen is procsvc's gqlgen entry point: gqlgen's own `generate`
// (same gqlgen.yml, same output) plus two plugins, inlineFields and inline,
// run by `go generate ./...` (../../../generate.go). It is the documented way
// to add a plugin to gqlgen (docs: reference/plugins).
package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"go/format"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/99designs/gqlgen/codegen/templates"
	"github.com/vektah/gqlparser/v2/ast"
)

// inlineObjects are the objects whose resolver fields are resolved on the
// goroutine marshalling the object, one after another, instead of each in a
// goroutine of its own (gqlgen's default for every resolver field). Their
// resolvers only read edges that the resolver returning the object primed
// (internal/loader: category, doer, project and comments of procedures,
// comment authors, token members), so they never wait: a goroutine per
// field costs more than the field (three goroutines per procedure of a
// page, with their stack growth). A key nobody primed still loads, batched
// with the same field of sibling objects, which marshal concurrently unless
// their list is one of inlineListObjects (which primes them first).
//
// gqlgen sets Object.DisableConcurrency itself only for the Mutation root;
// this plugin sets it before the executor is generated, so the generated
// code takes gqlgen's existing non-concurrent branch for these objects.
var inlineObjects = []string{"Procedure", "Comment", "Token"}

type inlineFields struct{}

func (inlineFields) Name() string { return "procsvc-inline-fields" }

func (inlineFields) GenerateCode(data *codegen.Data) error {
	for _, name := range inlineObjects {
		o := data.Objects.ByName(name)
		if o == nil {
			return fmt.Errorf("inline fields: no object %s in the schema", name)
		}
		o.DisableConcurrency = true
	}
	return nil
}

// inlineListObjects are the objects whose lists are marshalled element after
// element on the goroutine marshalling the list, instead of each element in
// a goroutine of its own (gqlgen's MarshalSliceConcurrently): a page of 50
// procedures started 50 goroutines for its nodes and 50 more for their
// comments, each growing a stack to marshal a few microseconds of fields.
//
// Concurrency is what batches a field that waits: sibling elements each
// Load a key and the dataloader reads them in one statement. Marshalled one
// after another, each element would wait out the batch window alone, one
// statement per element. So a list is marshalled sequentially only once the
// resolver root has primed, for the whole list at once, every edge the
// list's selection can wait on (graph.Resolver.PrimeList: one statement per
// edge at most, none when the list's resolver primed already); when it
// cannot say so (a list type it does not know, a read that failed), the
// list is marshalled concurrently as gqlgen does.
var inlineListObjects = []string{"Procedure", "ProcedureEdge", "Comment"}

// objectsWritten are the objects marshalled by inline.go's own marshaller
// instead of gqlgen's: their plain fields (struct fields of String, ID,
// Time, Boolean, Int, Float and enum types, with no resolver, argument or
// directive) are written straight into the object's JSON
// (graph/internal/inline) instead of each through gqlgen's per-field
// machinery, which costs some ten allocations per field for a field that
// can neither fail nor wait. Other fields are resolved by gqlgen's own
// generated field functions, exactly as its marshaller calls them. Only
// objects whose fields all resolve inline (no goroutine per field) qualify,
// so that nothing of gqlgen's concurrent or deferred execution is skipped.
//
// Field middleware (handler.Server.AroundFields) therefore does not see
// these objects' plain fields; procsvc registers none.
var objectsWritten = []string{"Procedure", "ProcedureEdge", "Comment", "Category", "Member", "Project"}

// inline generates inline.go (inline.gotpl) and rewrites gqlgen's executor
// to use it: the list marshallers of inlineListObjects call
// marshalInlineSlice instead of graphql.MarshalSliceConcurrently, and
// gqlgen's marshallers of objectsWritten (_Procedure, ...) are replaced by
// inline.go's (inlineProcedure, ...). (inline.go's are not named as gqlgen's:
// gqlgen type-checks its executor, beside the inline.go of the last run,
// before the rewrite.)
// gqlgen's templates offer no hook for either, so the rewrite matches the
// exact text its templates write (codegen/type.gotpl, codegen/object.gotpl)
// and fails generation when it is not found, rather than leave the executor
// unchanged silently.
type inline struct {
	// lists are the names of the list marshallers to rewrite.
	lists []string
	// objects are the names of the objects whose marshaller inline.go writes.
	objects []string
}

func (*inline) Name() string { return "procsvc-inline" }

//go:embed inline.gotpl
var inlineTemplate string

// inlineFile is written beside the executor.
const inlineFile = "inline.go"

type objectData struct {
	*codegen.Object
	Fields []fieldData
}

type fieldData struct {
	*codegen.Field
	// Kind is how the field is written: one of Object's methods in
	// graph/internal/inline (String, UUID, ...), Value for enums (written
	// by gqlgen's marshaller, at once), or Resolve (gqlgen's field
	// function, its marshaler kept).
	Kind string
}

func (l *inline) GenerateCode(data *codegen.Data) error {
	for _, ref := range data.ReferencedTypes {
		if ref.GQL.Elem == nil || !ref.IsSlice() || !slices.Contains(inlineListObjects, ref.GQL.Elem.Name()) {
			continue
		}
		l.lists = append(l.lists, ref.MarshalFunc())
	}
	for _, name := range inlineListObjects {
		if data.Objects.ByName(name) == nil {
			return fmt.Errorf("inline: no object %s in the schema", name)
		}
	}
	slices.Sort(l.lists)
	l.lists = slices.Compact(l.lists)
	if len(l.lists) == 0 {
		return fmt.Errorf("inline: no list of %v in the schema", inlineListObjects)
	}
	var objects []objectData
	for _, name := range objectsWritten {
		o := data.Objects.ByName(name)
		if o == nil {
			return fmt.Errorf("inline: no object %s in the schema", name)
		}
		if o.Root || o.Stream || len(o.Directives) > 0 {
			return fmt.Errorf("inline: object %s is a root, a stream or has directives", name)
		}
		od := objectData{Object: o}
		for _, f := range o.Fields {
			if f.IsConcurrent() || f.IsBatch() || f.Stream {
				return fmt.Errorf("inline: %s.%s resolves concurrently; only objects resolved inline can be written inline", name, f.Name)
			}
			od.Fields = append(od.Fields, fieldData{Field: f, Kind: kind(f)})
		}
		objects = append(objects, od)
		l.objects = append(l.objects, name)
	}
	return templates.Render(templates.Options{
		PackageName:     data.Config.Exec.Package,
		Filename:        filepath.Join(data.Config.Exec.Dir(), inlineFile),
		Data:            objects,
		Template:        inlineTemplate,
		GeneratedHeader: true,
		FileNotice:      "// Written by procsvc's gqlgen plugin (graph/internal/gqlgen).",
		Packages:        data.Config.Packages,
	})
}

// kind says how f is written (see fieldData.Kind).
func kind(f *codegen.Field) string {
	ref := f.TypeReference
	if f.IsResolver || !f.IsVariable() || len(f.Args) > 0 || f.HasDirectives() || ref.GQL.Elem != nil || ref.CastType != nil {
		return "Resolve"
	}
	if ref.Definition.Kind == ast.Enum {
		return "Value"
	}
	if ref.Definition.Kind != ast.Scalar {
		return "Resolve"
	}
	goType := types.TypeString(ref.GO, nil)
	ptr := strings.HasPrefix(goType, "*")
	if ptr && ref.GQL.NonNull {
		return "Resolve"
	}
	marshaler := ""
	if ref.Marshaler != nil {
		marshaler = ref.Marshaler.Pkg().Path() + "." + ref.Marshaler.Name()
	}
	suffix := ""
	if ptr {
		suffix = "Ptr"
	}
	switch {
	case ref.GQL.Name() == "String" && marshaler == "github.com/99designs/gqlgen/graphql.MarshalString" && strings.TrimPrefix(goType, "*") == "string":
		return "String" + suffix
	case ref.GQL.Name() == "ID" && marshaler == "github.com/procsvc/procsvc/graph/scalar.MarshalUUID" && strings.TrimPrefix(goType, "*") == "github.com/google/uuid.UUID":
		return "UUID" + suffix
	case ref.GQL.Name() == "Time" && marshaler == "github.com/procsvc/procsvc/graph/scalar.MarshalTime" && strings.TrimPrefix(goType, "*") == "time.Time":
		return "Time" + suffix
	case ref.GQL.Name() == "Boolean" && marshaler == "github.com/99designs/gqlgen/graphql.MarshalBoolean" && goType == "bool":
		return "Bool"
	case ref.GQL.Name() == "Int" && marshaler == "github.com/99designs/gqlgen/graphql.MarshalInt" && goType == "int":
		return "Int"
	case ref.GQL.Name() == "Float" && marshaler == "github.com/99designs/gqlgen/graphql.MarshalFloatContext" && goType == "float64":
		return "Float"
	}
	return "Resolve"
}

// marshalCall is how gqlgen's executor (codegen/generated!.gotpl, Exec)
// marshals the data of a response into its buffer; boundedCall marshals it
// within the response's bound (graph/internal/inline: budget.go), for
// queries and for each event of a subscription. A mutation's response keeps
// gqlgen's own: its root fields are bounded one by one as they run
// (graph/bound.go), so that a write that committed is never answered with
// an error in place of its result.
const (
	marshalCall = "data.MarshalGQL(&buf)"
	boundedCall = "inline.MarshalInto(ctx, &buf, data)"
)

// concurrentCall is how gqlgen's template calls the concurrent marshaller;
// the rewrite keeps its arguments (worker limit, omit_panic_handler, the
// element marshaller) and adds the list's selection and value before them.
const (
	concurrentCall = "graphql.MarshalSliceConcurrently(ctx, len(v), "
	inlineCall     = "ec.marshalInlineSlice(ctx, sel, v, len(v), "
)

// rewrite applies the rewrite to the executor gqlgen wrote.
func (l *inline) rewrite(cfg *config.Config) error {
	src, err := os.ReadFile(cfg.Exec.Filename)
	if err != nil {
		return err
	}
	if src, err = boundExec(src); err != nil {
		return err
	}
	for _, name := range l.lists {
		start, end, err := function(src, name+"(ctx context.Context, sel ast.SelectionSet, v ")
		if err != nil {
			return err
		}
		body := string(src[start:end])
		if strings.Count(body, concurrentCall) != 1 {
			return fmt.Errorf("inline: %s does not call %s once; has gqlgen's list template changed?", name, concurrentCall)
		}
		body = strings.Replace(body, concurrentCall, inlineCall, 1)
		src = slices.Concat(src[:start], []byte(body), src[end:])
	}
	for _, name := range l.objects {
		start, end, err := function(src, "_"+name+"(ctx context.Context, sel ast.SelectionSet, obj ")
		if err != nil {
			return err
		}
		src = slices.Concat(src[:start], src[end:])
		call, inlined := []byte("ec._"+name+"(ctx, sel, "), []byte("ec.inline"+name+"(ctx, sel, ")
		if !bytes.Contains(src, call) {
			return fmt.Errorf("inline: the executor never calls %s...)", call)
		}
		src = bytes.ReplaceAll(src, call, inlined)
	}
	src, err = format.Source(src)
	if err != nil {
		return fmt.Errorf("inline: formatting %s: %w", cfg.Exec.Filename, err)
	}
	return os.WriteFile(cfg.Exec.Filename, src, 0o644)
}

// boundExec makes Exec marshal the responses of queries and subscriptions
// with boundedCall: in each of its operation cases, the one marshalCall of
// the query and subscription cases, none of the mutation case's.
func boundExec(src []byte) ([]byte, error) {
	decl := []byte("\nfunc (e *executableSchema) Exec(ctx context.Context) graphql.ResponseHandler {")
	start := bytes.Index(src, decl)
	if start < 0 || bytes.Count(src, decl) != 1 {
		return nil, fmt.Errorf("inline: no single Exec in the executor; has gqlgen's template changed?")
	}
	end := bytes.Index(src[start:], []byte("\n}\n"))
	if end < 0 {
		return nil, fmt.Errorf("inline: Exec does not end")
	}
	end += start
	body := string(src[start:end])
	cases := []string{"case ast.Query:", "case ast.Mutation:", "case ast.Subscription:", "default:"}
	at := make([]int, len(cases))
	for i, c := range cases {
		if strings.Count(body, c) != 1 {
			return nil, fmt.Errorf("inline: Exec has not one %q; has gqlgen's template changed?", c)
		}
		at[i] = strings.Index(body, c)
		if i > 0 && at[i] < at[i-1] {
			return nil, fmt.Errorf("inline: Exec's cases are not in the order %v", cases)
		}
	}
	var out strings.Builder
	out.WriteString(body[:at[0]])
	for i := range len(cases) - 1 {
		part := body[at[i]:at[i+1]]
		if strings.Count(part, marshalCall) != 1 {
			return nil, fmt.Errorf("inline: Exec's %s does not call %s once; has gqlgen's template changed?", cases[i], marshalCall)
		}
		if cases[i] != "case ast.Mutation:" {
			part = strings.Replace(part, marshalCall, boundedCall, 1)
		}
		out.WriteString(part)
	}
	out.WriteString(body[at[len(cases)-1]:])
	src = slices.Concat(src[:start], []byte(out.String()), src[end:])
	// The executor imports the package of inline.go's writers, beside
	// gqlgen's (format.Source sorts the group).
	imp := []byte("\n\t\"github.com/99designs/gqlgen/graphql\"\n")
	if bytes.Count(src, imp) != 1 {
		return nil, fmt.Errorf("inline: the executor does not import github.com/99designs/gqlgen/graphql once")
	}
	if !bytes.Contains(src, []byte(`"github.com/procsvc/procsvc/graph/internal/inline"`)) {
		src = bytes.Replace(src, imp, []byte("\n\t\"github.com/99designs/gqlgen/graphql\"\n\t\"github.com/procsvc/procsvc/graph/internal/inline\"\n"), 1)
	}
	return src, nil
}

// function finds the method of executionContext whose name and parameters
// begin with head in src, and returns where its text begins and ends
// (gofmt'd: it ends at the first closing brace in column 0).
func function(src []byte, head string) (start, end int, err error) {
	decl := []byte("\nfunc (ec *executionContext) " + head)
	start = bytes.Index(src, decl)
	if start < 0 || bytes.Count(src, decl) != 1 {
		return 0, 0, fmt.Errorf("inline: no single func (ec *executionContext) %s... in the executor", head)
	}
	brace := bytes.Index(src[start:], []byte("\n}\n"))
	if brace < 0 {
		return 0, 0, fmt.Errorf("inline: func (ec *executionContext) %s... does not end", head)
	}
	return start, start + brace + len("\n}"), nil
}

func main() {
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen: loading config:", err)
		os.Exit(2)
	}
	in := &inline{}
	if err := api.Generate(cfg, api.AddPlugin(inlineFields{}), api.AddPlugin(in)); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
	if err := in.rewrite(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
}
