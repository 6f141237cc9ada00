package gqlhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/graph/scalar"
	"github.com/procsvc/procsvc/internal/apperr"
)

// Input values are checked before anything runs, the same way whether they
// are written in the document (literals: input_fields.go's validation rule)
// or sent as variables (input_variables.go), so that a mistake gets one
// answer however it is sent (docs/api.md, "Request errors and field
// errors"):
//
//   - 400 validation_failed, no data, nothing executed;
//   - extensions.fields naming each refused value by its argument or input
//     field, the innermost one, as REST names a body's field (`priority`,
//     `dueAt`); a list's elements by the list's name; a variable by the
//     argument or input field it is passed to;
//   - REST's words for the same mistake (internal/core's validation):
//     "is required", "must be one of LOW, MEDIUM, HIGH", timefmt's errors
//     for a Time (through the scalar's own parser, scalar.UnmarshalTime).
//
// gqlparser's own checks stay underneath (its rules for values are replaced,
// its coercion of variables still runs first), so nothing it refuses is
// accepted here; these are stricter where it is lenient (an enum's case, a
// number sent for a String, a string for an Int) and check the values of
// custom scalars, which gqlgen would otherwise parse only while executing,
// after earlier root fields of a mutation had written.

// maxInputProblems bounds the problems one request reports: a list of a
// hundred thousand wrong values answers with its first few, not a response
// as large as the request.
const maxInputProblems = 20

// Field messages, in REST's words where REST has the same mistake.
const (
	msgRequired = "is required"
	// A list's element names the list: "is required" would read as the
	// list's own absence.
	msgNullElement = "must not contain null"
	msgString      = "must be a string"
	msgBoolean     = "must be true or false"
	msgNumber      = "must be a number"
	msgWhole       = "must be a whole number"
	// core's word for a malformed id; the type takes any string (a
	// procedure's shortId too) or integer.
	msgID = "must be an id"
)

// enumName is an enum value written in a document (`priority: HIGH`), told
// apart from a string (`priority: "HIGH"`), which an enum does not accept
// there; in variables an enum value is a string.
type enumName string

// scalarParsers are the parsers of procsvc's own scalars, the functions the
// generated code calls for them while executing (gqlgen.yml): a value they
// refuse is refused here, before anything runs, in their words. JSON
// (graphql.Any) takes any value.
var scalarParsers = map[string]func(any) error{
	"Time": func(v any) error { _, err := scalar.UnmarshalTime(v); return err },
}

// inputProblem is one refused value: the argument or input field it names,
// the message, and where it is: a literal's position, or a variable's path
// (["variable", "in", "priority"]).
type inputProblem struct {
	field, message string
	pos            *ast.Position
	path           ast.Path
}

// inputProblems collects the problems of one request's input values, at
// most maxInputProblems.
type inputProblems struct {
	schema *ast.Schema
	list   []inputProblem
}

func (p *inputProblems) full() bool { return len(p.list) >= maxInputProblems }

func (p *inputProblems) add(field, message string, pos *ast.Position, path ast.Path) {
	if !p.full() {
		p.list = append(p.list, inputProblem{field: field, message: message, pos: pos, path: path})
	}
}

// err is the problems as one validation_failed error in REST's shape (the
// first field's message, every field in Fields), or nil.
func (p *inputProblems) err() *apperr.Error {
	var val apperr.Validation
	for _, pr := range p.list {
		val.Add(pr.field, "%s", pr.message)
	}
	var ae *apperr.Error
	if errors.As(val.Err(), &ae) {
		return ae
	}
	return nil
}

// literal checks v, written in the document for the argument or input field
// field of type typ. Variables in it are checked with the request's
// variables.
func (p *inputProblems) literal(field string, typ *ast.Type, v *ast.Value) {
	switch {
	case v == nil || v.Kind == ast.Variable || p.full():
		return
	case v.Kind == ast.NullValue:
		if typ.NonNull {
			p.add(field, msgRequired, v.Position, nil)
		}
		return
	case typ.Elem != nil:
		if v.Kind != ast.ListValue {
			// One value where a list is expected is a list of one.
			p.literal(field, typ.Elem, v)
			return
		}
		for _, c := range v.Children {
			if c.Value.Kind == ast.NullValue && typ.Elem.NonNull {
				p.add(field, msgNullElement, c.Value.Position, nil)
				continue
			}
			p.literal(field, typ.Elem, c.Value)
		}
		return
	}
	def := p.schema.Types[typ.NamedType]
	switch {
	case def == nil:
		// An unknown type is KnownTypeNames's to report.
	case def.Kind == ast.InputObject:
		if v.Kind != ast.ObjectValue {
			p.add(field, objectMessage(def), v.Position, nil)
			return
		}
		for _, c := range v.Children {
			if def.Fields.ForName(c.Name) == nil {
				p.add(c.Name, notAFieldMessage(def), c.Position, nil)
			}
		}
		for _, f := range def.Fields {
			if c := v.Children.ForName(f.Name); c != nil {
				p.literal(f.Name, f.Type, c)
			} else if f.Type.NonNull && f.DefaultValue == nil {
				p.add(f.Name, msgRequired, v.Position, nil)
			}
		}
	case scalarParsers[def.Name] != nil:
		if hasVariable(v) {
			return
		}
		raw, err := v.Value(nil)
		if err == nil {
			if msg := parserProblem(def.Name, raw); msg != "" {
				p.add(field, msg, v.Position, nil)
			}
		}
	default:
		if msg := leafProblem(def, literalLeaf(v), true); msg != "" {
			p.add(field, msg, v.Position, nil)
		}
	}
}

// variable checks v, the value at path of a variable of type typ, for the
// argument or input field field ("" for the variable itself and its list's
// elements, named later by where the variable is used). A nil v is null or
// not sent.
func (p *inputProblems) variable(field string, path ast.Path, typ *ast.Type, v any) {
	if p.full() {
		return
	}
	if v == nil {
		if typ.NonNull {
			p.add(field, msgRequired, nil, path)
		}
		return
	}
	if typ.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			p.variable(field, path, typ.Elem, v)
			return
		}
		for i, e := range list {
			if e == nil && typ.Elem.NonNull {
				p.add(field, msgNullElement, nil, at(path, ast.PathIndex(i)))
				continue
			}
			p.variable(field, at(path, ast.PathIndex(i)), typ.Elem, e)
		}
		return
	}
	def := p.schema.Types[typ.NamedType]
	switch {
	case def == nil:
	case def.Kind == ast.InputObject:
		obj, ok := v.(map[string]any)
		if !ok {
			p.add(field, objectMessage(def), nil, path)
			return
		}
		var unknown []string
		for name := range obj {
			// gqlparser ignores __typename in an input object, as a
			// client that echoes a read object sends it.
			if name != "__typename" && def.Fields.ForName(name) == nil {
				unknown = append(unknown, name)
			}
		}
		sort.Strings(unknown)
		for _, name := range unknown {
			p.add(name, notAFieldMessage(def), nil, at(path, ast.PathName(name)))
		}
		for _, f := range def.Fields {
			fv, sent := obj[f.Name]
			switch {
			case sent:
				p.variable(f.Name, at(path, ast.PathName(f.Name)), f.Type, fv)
			case f.Type.NonNull && f.DefaultValue == nil:
				p.add(f.Name, msgRequired, nil, at(path, ast.PathName(f.Name)))
			}
		}
	case scalarParsers[def.Name] != nil:
		if msg := parserProblem(def.Name, v); msg != "" {
			p.add(field, msg, nil, path)
		}
	default:
		if msg := leafProblem(def, v, false); msg != "" {
			p.add(field, msg, nil, path)
		}
	}
}

// at is path with elem appended, in a slice of its own.
func at(path ast.Path, elem ast.PathElement) ast.Path {
	return append(path[:len(path):len(path)], elem)
}

func objectMessage(def *ast.Definition) string {
	return "must be an object (" + def.Name + ")"
}

// notAFieldMessage is REST's "is not a field of this resource", naming the
// input type: GraphQL's inputs are not all resources (ProcedureOrder).
func notAFieldMessage(def *ast.Definition) string {
	return "is not a field of " + def.Name
}

// hasVariable reports whether v holds a variable, at any depth.
func hasVariable(v *ast.Value) bool {
	if v.Kind == ast.Variable {
		return true
	}
	for _, c := range v.Children {
		if hasVariable(c.Value) {
			return true
		}
	}
	return false
}

// literalLeaf is a literal as leafProblem reads values: names of enum values
// as enumName, numbers as json.Number (as variables carry them), strings,
// booleans; a list or object as itself, which no leaf accepts.
func literalLeaf(v *ast.Value) any {
	switch v.Kind {
	case ast.EnumValue:
		return enumName(v.Raw)
	case ast.IntValue, ast.FloatValue:
		return json.Number(v.Raw)
	case ast.StringValue, ast.BlockValue:
		return v.Raw
	case ast.BooleanValue:
		return v.Raw == "true"
	}
	return v
}

// parserProblem is the message of the scalar parser's refusal of v, or "".
func parserProblem(scalarName string, v any) string {
	err := scalarParsers[scalarName](v)
	if err == nil {
		return ""
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// leafProblem is what is wrong with v as a value of def, an enum or a
// built-in scalar, or "". inDocument says v was written in the document,
// where an enum value is a name (enumName); in variables it is a string.
func leafProblem(def *ast.Definition, v any, inDocument bool) string {
	if def.Kind == ast.Enum {
		var name string
		var ok bool
		if inDocument {
			var e enumName
			e, ok = v.(enumName)
			name = string(e)
		} else {
			name, ok = v.(string)
		}
		if !ok || def.EnumValues.ForName(name) == nil {
			return "must be one of " + enumValues(def)
		}
		return ""
	}
	switch def.Name {
	case "String":
		if _, ok := v.(string); !ok {
			return msgString
		}
	case "Boolean":
		if _, ok := v.(bool); !ok {
			return msgBoolean
		}
	case "Float":
		if _, _, ok := numberValue(v); !ok {
			return msgNumber
		}
	case "Int":
		n, digits, ok := numberValue(v)
		switch {
		case !ok || n != math.Trunc(n):
			return msgWhole
		case n < math.MinInt32 || n > math.MaxInt32:
			return fmt.Sprintf("%s from %d to %d", msgWhole, math.MinInt32, math.MaxInt32)
		case !digits:
			// 1e2 or 100.0: gqlparser's coercion takes only digits.
			return msgWhole + " written without a fraction or exponent"
		}
	case "ID":
		// The specification's ID: a string, or an integer it turns into a
		// string; one past 2^53 may have been rounded on its way.
		if _, ok := v.(string); ok {
			return ""
		}
		if n, digits, ok := numberValue(v); !ok || !digits || n != math.Trunc(n) || math.Abs(n) > 1<<53-1 {
			return msgID
		}
	}
	return ""
}

// enumValues lists def's values as REST lists an enum's: "LOW, MEDIUM, HIGH".
func enumValues(def *ast.Definition) string {
	names := make([]string, len(def.EnumValues))
	for i, e := range def.EnumValues {
		names[i] = e.Name
	}
	return strings.Join(names, ", ")
}

// numberValue reads v as a number, as a request carries one (json.Number)
// or gqlparser's coercion left it (int64, float64): ok says it is one, n is
// its value, digits that it is written as an integer, without a fraction or
// exponent.
func numberValue(v any) (n float64, digits, ok bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			// Not a number, or beyond float64 (1e400), as no JSON
			// request holds (gqlrequest).
			return 0, false, false
		}
		return f, !strings.ContainsAny(string(v), ".eE"), true
	case int:
		return float64(v), true, true
	case int32:
		return float64(v), true, true
	case int64:
		return float64(v), true, true
	case float32:
		return float64(v), float64(v) == math.Trunc(float64(v)), true
	case float64:
		// Decoded without json.Number: its spelling is gone.
		return v, v == math.Trunc(v), true
	}
	return 0, false, false
}
