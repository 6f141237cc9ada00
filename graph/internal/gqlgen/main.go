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
// fields of these objects, since they are not resolved as fields at all,
// nor the edges of edgesWritten; their other fields (resolvers, arguments,
// directives, lists) go through it as usual. procsvc registers no field middleware (graph/gqlhttp/executor.go says
// so where the executor is built). One that must see every field requires
// removing the objects from this list, and the speed with them.
var objectsWritten = []string{"Procedure", "ProcedureEdge", "Comment", "CommentEdge", "Category", "Member", "Project",
	"ProcedureConnection", "CommentConnection", "ProjectConnection", "PageInfo"}

// edgesWritten are the edges (Object.field) whose value the resolver of
// the list holding the object primed (internal/loader; graph.Resolver's
// PrimeList), resolved without gqlgen's per-field machinery when the
// selection under them holds only plain fields (as on the list page and
// the dashboard: category { id name }): the resolver is called on the
// object's goroutine, as it already was (inlineObjects), and its result's
// plain fields are written as objectsWritten's are. gqlgen's field
// function costs an edge a field context, a context, four closures, the
// result boxed in an any and a deferred recover: some ten allocations, 600
// edges a dashboard. An edge whose selection holds anything else (a list,
// an argument: category { procedures(first: 3) { ... } }) is resolved by
// gqlgen's field function as before. The field context is made only to
// report an error, a null in a non-null edge or a panic, with the path
// and the bytes gqlgen's would (graph/generated's TestEdgesAnswerAsGqlgen
// compares the two ways' answers).
//
// Each must be a resolver field without arguments or directives, on an
// object of objectsWritten resolved inline (inlineObjects), whose type is
// an object of objectsWritten; the schema must have no FIELD directive
// (which gqlgen runs as field middleware).
var edgesWritten = []string{"Procedure.category", "Procedure.doer", "Procedure.project", "Comment.author"}

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

// templateData is what inline.gotpl renders.
type templateData struct {
	Objects []objectData
	Edges   []fieldData
	// Recover is whether field functions recover from panics (gqlgen's
	// omit_panic_handler unset).
	Recover bool
}

type objectData struct {
	*codegen.Object
	Fields []fieldData
}

// NotPlain are the names of the fields of o that are not written straight
// into its JSON: those resolved by gqlgen's field functions, or by an
// edge's.
func (o objectData) NotPlain() []string {
	var names []string
	for _, f := range o.Fields {
		if f.Kind == "Resolve" || f.Kind == "Float" || f.Kind == "Edge" {
			names = append(names, f.Name)
		}
	}
	return names
}

type fieldData struct {
	*codegen.Field
	// Kind is how the field is written: one of Object's methods in
	// graph/internal/inline (String, UUID, ...), Value for enums (written
	// by gqlgen's marshaller, at once), or Resolve (gqlgen's field
	// function, its marshaler kept), or Edge (an edge of edgesWritten).
	Kind string
	// Target is the object an Edge leads to.
	Target *codegen.Object
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
	edges, err := checkEdges(data)
	if err != nil {
		return err
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
			fd := fieldData{Field: f, Kind: kind(f)}
			if target, ok := edges[name+"."+f.Name]; ok {
				fd.Kind, fd.Target = "Edge", target
			}
			od.Fields = append(od.Fields, fd)
		}
		objects = append(objects, od)
		l.objects = append(l.objects, name)
	}
	var written []fieldData
	for _, od := range objects {
		for _, f := range od.Fields {
			if f.Kind == "Edge" {
				written = append(written, f)
			}
		}
	}
	return templates.Render(templates.Options{
		PackageName:     data.Config.Exec.Package,
		Filename:        filepath.Join(data.Config.Exec.Dir(), inlineFile),
		Data:            templateData{Objects: objects, Edges: written, Recover: !data.Config.OmitPanicHandler},
		Template:        inlineTemplate,
		GeneratedHeader: true,
		FileNotice:      "// Written by procsvc's gqlgen plugin (graph/internal/gqlgen).",
		Packages:        data.Config.Packages,
	})
}

// checkEdges returns the objects the edges of edgesWritten lead to, by
// edge, or why one cannot be written.
func checkEdges(data *codegen.Data) (map[string]*codegen.Object, error) {
	if len(data.AllDirectives.LocationDirectives("FIELD")) > 0 {
		return nil, fmt.Errorf("inline: the schema has FIELD directives, which gqlgen runs around every field; edges cannot be written")
	}
	edges := map[string]*codegen.Object{}
	for _, name := range edgesWritten {
		object, fieldName, _ := strings.Cut(name, ".")
		o := data.Objects.ByName(object)
		if o == nil || !slices.Contains(objectsWritten, object) || !slices.Contains(inlineObjects, object) {
			return nil, fmt.Errorf("inline: edge %s: %s is not an object written and resolved inline", name, object)
		}
		var f *codegen.Field
		for _, of := range o.Fields {
			if of.Name == fieldName {
				f = of
			}
		}
		if f == nil {
			return nil, fmt.Errorf("inline: edge %s: no such field", name)
		}
		ref := f.TypeReference
		if !f.IsResolver || len(f.Args) > 0 || f.HasDirectives() || ref.GQL.Elem != nil || ref.Definition.Kind != ast.Object || !ref.IsPtr() {
			return nil, fmt.Errorf("inline: edge %s is not a resolver of one object, without arguments or directives", name)
		}
		target := data.Objects.ByName(ref.Definition.Name)
		if target == nil || !slices.Contains(objectsWritten, target.Name) {
			return nil, fmt.Errorf("inline: edge %s leads to %s, which is not an object written", name, ref.Definition.Name)
		}
		edges[name] = target
	}
	return edges, nil
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
