// Command gqlgen is procsvc's gqlgen entry point: gqlgen's own `generate`
// (same gqlgen.yml, same output) plus two plugins, inlineFields and inline,
// run by `go generate ./...` (../../../generate.go). It is the documented way
// to add a plugin to gqlgen (docs: reference/plugins).
//
// Both plugins exist for speed, measured on the GraphQL list page
// (bench's BenchmarkProcedureListGraphQL*, with and without them); see
// docs/performance.md. inlineFields only sets a flag of gqlgen's data model. inline also edits the text of
// gqlgen's executor (rewrite.go), since gqlgen has no hook for what it
// changes; so that a gqlgen upgrade cannot silently change the executor,
// generation first checks the gqlgen templates it depends on and fails
// naming any that changed (templates.go).
package main

import (
	_ "embed"
	"fmt"
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
// comment authors, token members, the members events name), so they never
// wait: a goroutine per
// field costs more than the field (three goroutines per procedure of a
// page, with their stack growth). A key nobody primed still loads, batched
// with the same field of sibling objects, which marshal concurrently unless
// their list is one of inlineListObjects (which primes them first).
//
// gqlgen sets Object.DisableConcurrency itself only for the Mutation root;
// this plugin sets it before the executor is generated, so the generated
// code takes gqlgen's existing non-concurrent branch for these objects.
var inlineObjects = []string{"Procedure", "Comment", "Token", "Project", "Category", "Member", "EventActor"}

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
var inlineListObjects = []string{"Procedure", "ProcedureEdge", "Comment", "CommentEdge", "Project", "ProjectEdge", "Category", "CategoryEdge", "Member", "MemberEdge",
	"Event", "EventEdge", "FieldChange"}

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
// (gqlgen's marshaller of every object also opens a DeferredGroup for
// @defer, copying the field's whole path; procsvc refuses @defer, so the
// group only ever cost allocations: 200 comment connections a dashboard.)
//
// The price: field middleware (handler.Server.AroundFields, or any
// graphql.FieldInterceptor extension such as a tracer) never sees the plain
// fields of these objects, since they are not resolved as fields at all;
// their other fields (resolvers, arguments, directives, lists) go through
// it as usual. procsvc registers no field middleware (graph/gqlhttp/executor.go says
// so where the executor is built). One that must see every field requires
// removing the objects from this list, and the speed with them.
var objectsWritten = []string{"Procedure", "ProcedureEdge", "Comment", "CommentEdge", "Category", "Member", "Project",
	"ProcedureConnection", "CommentConnection", "ProjectConnection", "PageInfo"}

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

func main() {
	dir, err := gqlgenDir()
	if err == nil {
		err = checkTemplates(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
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
