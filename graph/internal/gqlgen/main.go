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
// nor the edges of edgesWritten, the lists of listsWritten or the fields
// of argEdgesWritten; their other fields (resolvers, arguments,
// directives, lists) go through it as usual. procsvc registers no field
// middleware (graph/gqlhttp/executor.go says so where the executor is
// built). One that must see every field requires
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

// listsWritten are the lists (Object.field) of objects written whose
// elements are written one after another, without gqlgen's field function
// for the list nor a field context per element, when the selection under
// them holds only plain fields and no element is nil: a plain field can
// neither fail nor wait, so nothing needs a field context to report at its
// path (a response bound passed is reported at the element's, see
// inline.NewElement). gqlgen's way costs a list a field context, a
// context, closures, the list boxed in an any, a call to the resolver
// root's PrimeList and, per element, a field context and a context: the
// dashboard's 200 comment connections (comments { nodes { id text } }) paid
// it for two or three comments each. Any other selection (an edge, a
// field with arguments, a Float) goes through gqlgen's, as do the tests
// comparing the two ways (edgesByGqlgen).
//
// Each must be a struct field, without arguments or directives, of an
// object of objectsWritten, whose type is a non-null list of non-null
// objects of objectsWritten.
var listsWritten = []string{"CommentConnection.nodes", "ProcedureConnection.nodes", "ProjectConnection.nodes"}

// argEdgesWritten are the resolver fields with arguments (Object.field) of
// objects written and resolved inline that are resolved without gqlgen's
// per-call machinery: the resolver is called with a field context made
// from the first one made for the same field in the response
// (inline.SharedFieldContext: its arguments parsed once, not once per
// object), and its result is marshalled by gqlgen's marshaller, as gqlgen's
// field function would. An error, a panic or a null where the schema allows
// none is answered at the field's path, as gqlgen's would (graph/generated's
// TestEdgesAnswerAsGqlgen compares the two ways' answers). A page of 50
// procedures paid, for each procedure's comments(last: 3), the arguments'
// maps and values, a field context, a context and gqlgen's closures: some
// fifteen allocations per procedure, 3 000 a dashboard.
//
// Each must be a resolver field with arguments and without directives, on
// an object of objectsWritten resolved inline (inlineObjects).
var argEdgesWritten = []string{"Procedure.comments", "Procedure.history"}

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
	Lists   []fieldData
	// ArgEdges are the fields of argEdgesWritten.
	ArgEdges []fieldData
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
		switch f.Kind {
		case "Resolve", "Float", "Edge", "ArgEdge", "List":
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
	// function, its marshaler kept), Edge (an edge of edgesWritten),
	// ArgEdge (a field of argEdgesWritten) or List (a list of
	// listsWritten).
	Kind string
	// Target is the object an Edge leads to, or a List holds.
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
	lists, err := checkLists(data)
	if err != nil {
		return err
	}
	argEdges, err := checkArgEdges(data)
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
			if target, ok := lists[name+"."+f.Name]; ok {
				fd.Kind, fd.Target = "List", target
			}
			if argEdges[name+"."+f.Name] {
				fd.Kind = "ArgEdge"
			}
			od.Fields = append(od.Fields, fd)
		}
		objects = append(objects, od)
		l.objects = append(l.objects, name)
	}
	var written, writtenLists, writtenArgEdges []fieldData
	for _, od := range objects {
		for _, f := range od.Fields {
			switch f.Kind {
			case "Edge":
				written = append(written, f)
			case "List":
				writtenLists = append(writtenLists, f)
			case "ArgEdge":
				writtenArgEdges = append(writtenArgEdges, f)
			}
		}
	}
	if len(writtenLists) != len(listsWritten) || len(writtenArgEdges) != len(argEdgesWritten) {
		return fmt.Errorf("inline: not all of the lists %v and fields %v are on objects written", listsWritten, argEdgesWritten)
	}
	return templates.Render(templates.Options{
		PackageName: data.Config.Exec.Package,
		Filename:    filepath.Join(data.Config.Exec.Dir(), inlineFile),
		Data: templateData{Objects: objects, Edges: written, Lists: writtenLists, ArgEdges: writtenArgEdges,
			Recover: !data.Config.OmitPanicHandler},
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
		f, err := writtenField(data, "edge", name, true)
		if err != nil {
			return nil, err
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

// writtenField returns the field name (Object.field) names, of an object
// written (and resolved inline, if inline), or why it cannot be written;
// what says what the field is to the plugin, for the error.
func writtenField(data *codegen.Data, what, name string, inline bool) (*codegen.Field, error) {
	object, fieldName, _ := strings.Cut(name, ".")
	o := data.Objects.ByName(object)
	if o == nil || !slices.Contains(objectsWritten, object) || (inline && !slices.Contains(inlineObjects, object)) {
		return nil, fmt.Errorf("inline: %s %s: %s is not an object written (and resolved inline, for an edge)", what, name, object)
	}
	for _, f := range o.Fields {
		if f.Name == fieldName {
			return f, nil
		}
	}
	return nil, fmt.Errorf("inline: %s %s: no such field", what, name)
}

// checkArgEdges returns the fields of argEdgesWritten, or why one cannot
// be written.
func checkArgEdges(data *codegen.Data) (map[string]bool, error) {
	fields := map[string]bool{}
	for _, name := range argEdgesWritten {
		f, err := writtenField(data, "field", name, true)
		if err != nil {
			return nil, err
		}
		if !f.IsResolver || len(f.Args) == 0 || f.HasDirectives() || f.ArgsFunc() == "" {
			return nil, fmt.Errorf("inline: field %s is not a resolver with arguments and without directives", name)
		}
		fields[name] = true
	}
	return fields, nil
}

// checkLists returns the objects the lists of listsWritten hold, by list,
// or why one cannot be written.
func checkLists(data *codegen.Data) (map[string]*codegen.Object, error) {
	lists := map[string]*codegen.Object{}
	for _, name := range listsWritten {
		f, err := writtenField(data, "list", name, false)
		if err != nil {
			return nil, err
		}
		ref := f.TypeReference
		if f.IsResolver || !f.IsVariable() || len(f.Args) > 0 || f.HasDirectives() || !ref.IsSlice() ||
			!ref.GQL.NonNull || ref.GQL.Elem == nil || !ref.GQL.Elem.NonNull || ref.GQL.Elem.Elem != nil || ref.Definition.Kind != ast.Object {
			return nil, fmt.Errorf("inline: list %s is not a struct field, without arguments or directives, of type [Object!]!", name)
		}
		if types.TypeString(ref.GO, nil) != "[]*"+types.TypeString(data.Objects.ByName(ref.Definition.Name).Type, nil) {
			return nil, fmt.Errorf("inline: list %s is a %s, not a slice of pointers to its objects", name, types.TypeString(ref.GO, nil))
		}
		target := data.Objects.ByName(ref.Definition.Name)
		if target == nil || !slices.Contains(objectsWritten, target.Name) {
			return nil, fmt.Errorf("inline: list %s holds %s, which is not an object written", name, ref.Definition.Name)
		}
		lists[name] = target
	}
	return lists, nil
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
