// Package inline writes the JSON of the objects that procsvc's gqlgen plugin
// (graph/internal/gqlgen) marshals inline: their plain fields (struct fields
// of String, ID, Time, Boolean, Int, Float and enum types) are written
// straight into the object's buffer when the object is resolved, instead of
// each through gqlgen's per-field machinery (a field context, closures, a
// boxed result and a marshaler: some ten allocations per field, ~1 750
// fields per list page). Fields resolved the gqlgen way are kept as
// marshalers, written in their place when the response is.
//
// Each field is written in the bytes gqlgen's own marshaler writes, except
// strings: jsontext.AppendString writes them as REST's bodies do, as
// encoding/json escapes them. gqlgen's MarshalString would pass bytes that
// are not UTF-8 and U+2028/U+2029 through (a body that is not UTF-8, a
// string JavaScript cannot hold raw) and spell control characters \u0008
// and \u001F where encoding/json writes \b and \u001f: the same text.
package inline

import (
	"bytes"
	"context"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/graph/scalar"
	"github.com/procsvc/procsvc/internal/jsontext"
)

// Object is an object's JSON in the making, then its marshaler.
type Object struct {
	buf bytes.Buffer
	// parts are the marshalers of fields resolved the gqlgen way, each
	// written after buf's bytes up to its end.
	parts []part
	// Invalids counts non-null fields that resolved to null, as
	// graphql.FieldSet.Invalids does.
	Invalids int
	n        int

	// budget is the response's (budget.go), nil for none; counted is how
	// much of buf it has counted, units what that came to (sentLen's when
	// the budget counts as sent), and precounted the units of the bytes
	// after counted that children inlined (Field) counted already.
	budget                     *Budget
	counted, units, precounted int
	// ctx is the object's field's, for the path where a budget passed.
	ctx context.Context
	// edge is the alias of the field holding the object, when ctx is not
	// its field's but its parent's (NewEdge, NewElement); index is the
	// object's place in that field's list, when element is set.
	edge    string
	index   int
	element bool
	// last is the alias of the field written last.
	last string
	// spent is set once the budget is spent: the object writes nothing
	// more, and is never sent.
	spent bool
	// closed is set by Close on an object still within its budget.
	closed bool
}

// objects are Objects to reuse: an edge's (a procedure's category, doer,
// project), once Field has copied its bytes into its parent's, is reused
// for the next object rather than left to the collector with its buffer
// (three for each procedure of a list).
var objects = sync.Pool{New: func() any { return new(Object) }}

// reusedBuffer bounds the buffer an Object keeps for reuse, in bytes: one
// that grew past it (a long text) is left to the collector.
const reusedBuffer = 1024

// release offers o, whose bytes are no longer needed and which nothing
// holds any more, for reuse.
func release(o *Object) {
	if o.buf.Cap() > reusedBuffer {
		return
	}
	buf := o.buf
	buf.Reset()
	*o = Object{buf: buf}
	objects.Put(o)
}

type part struct {
	end int
	m   graphql.Marshaler
}

// New returns an object sized for about size bytes of plain fields, of the
// response of ctx (counted against its Budget).
func New(ctx context.Context, size int) *Object {
	o := objects.Get().(*Object)
	if b := BudgetOf(ctx); b != nil {
		if b.Passed() {
			o.spent = true
			return o
		}
		o.budget, o.ctx = b, ctx
	}
	o.buf.Grow(size)
	o.buf.WriteByte('{')
	return o
}

// NewEdge is New for the object of a field resolved without a field
// context of its own (an edge the plugin writes): ctx is the parent
// object's, alias the field's, so that the path where a budget passed is
// still the field's.
func NewEdge(ctx context.Context, alias string, size int) *Object {
	o := New(ctx, size)
	o.edge = alias
	return o
}

// NewElement is New for the element at index of a list field resolved
// without a field context of its own, nor one per element (a list the
// plugin writes): ctx is the parent object's, alias the list field's, so
// that the path where a budget passed is still the element's.
func NewElement(ctx context.Context, alias string, index, size int) *Object {
	o := NewEdge(ctx, alias, size)
	o.index, o.element = index, true
	return o
}

// bigString is the length from which a string is counted against the
// budget as soon as it is written, not when its object closes: a selection
// may repeat a long field under many aliases.
const bigString = 4096

// count counts against the budget what the object wrote since it last
// did; once the budget is spent, the object drops what it holds.
func (o *Object) count() {
	if o.budget == nil || o.spent {
		return
	}
	n := o.buf.Len() - o.counted
	if o.budget.asSent {
		n = sentLen(o.buf.Bytes()[o.counted:])
	}
	o.units += n
	n -= o.precounted
	o.counted, o.precounted = o.buf.Len(), 0
	if o.budget.spend(n, o.path) {
		return
	}
	o.spent = true
	o.buf = bytes.Buffer{}
	o.parts = nil
}

// path is where the object was writing: its field's path, and the alias of
// the field it wrote last.
func (o *Object) path() ast.Path {
	var p ast.Path
	if fc := graphql.GetFieldContext(o.ctx); fc != nil {
		p = fc.Path()
	}
	if o.edge != "" {
		p = append(p, ast.PathName(o.edge))
	}
	if o.element {
		p = append(p, ast.PathIndex(o.index))
	}
	if o.last != "" {
		p = append(p, ast.PathName(o.last))
	}
	return p
}

// key writes the separator and the key of the next field. Aliases are
// GraphQL names, which need no escaping.
func (o *Object) key(alias string) []byte {
	o.last = alias
	b := o.buf.AvailableBuffer()
	if o.n > 0 {
		b = append(b, ',')
	}
	o.n++
	b = append(b, '"')
	b = append(b, alias...)
	return append(b, '"', ':')
}

// String writes a String field.
func (o *Object) String(alias, s string) {
	if o.spent {
		return
	}
	o.buf.Write(jsontext.AppendString(o.key(alias), s))
	if len(s) >= bigString {
		o.count()
	}
}

// StringPtr writes a nullable String field.
func (o *Object) StringPtr(alias string, s *string) { writeNullable(o, alias, s, (*Object).String) }

// writeNullable writes a nullable field: null, or *v by write.
func writeNullable[T any](o *Object, alias string, v *T, write func(o *Object, alias string, v T)) {
	if o.spent {
		return
	}
	if v == nil {
		o.buf.Write(append(o.key(alias), "null"...))
		return
	}
	write(o, alias, *v)
}

// Bool writes a Boolean field.
func (o *Object) Bool(alias string, v bool) {
	if o.spent {
		return
	}
	o.buf.Write(strconv.AppendBool(o.key(alias), v))
}

// Int writes an Int field.
func (o *Object) Int(alias string, v int) {
	if o.spent {
		return
	}
	o.buf.Write(strconv.AppendInt(o.key(alias), int64(v), 10))
}

// Float writes a Float field and reports true, or reports false and writes
// nothing for a value gqlgen refuses (NaN, ±Inf), whose field must then be
// resolved the gqlgen way to report its error.
func (o *Object) Float(alias string, v float64) bool {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return false
	}
	if o.spent {
		return true
	}
	// What fmt's %g, gqlgen's format, writes.
	o.buf.Write(strconv.AppendFloat(o.key(alias), v, 'g', -1, 64))
	return true
}

// UUID writes an ID field held as a UUID, as scalar.MarshalUUID does.
func (o *Object) UUID(alias string, id uuid.UUID) {
	if o.spent {
		return
	}
	b := append(o.key(alias), '"')
	b = scalar.AppendUUID(b, id)
	o.buf.Write(append(b, '"'))
}

// UUIDPtr writes a nullable ID field held as a UUID.
func (o *Object) UUIDPtr(alias string, id *uuid.UUID) { writeNullable(o, alias, id, (*Object).UUID) }

// Time writes a Time field, as scalar.MarshalTime does.
func (o *Object) Time(alias string, t time.Time) {
	if o.spent {
		return
	}
	b := append(o.key(alias), '"')
	b = scalar.AppendTime(b, t)
	o.buf.Write(append(b, '"'))
}

// TimePtr writes a nullable Time field.
func (o *Object) TimePtr(alias string, t *time.Time) { writeNullable(o, alias, t, (*Object).Time) }

// Value writes a field's value now, by its marshaler (enums).
func (o *Object) Value(alias string, m graphql.Marshaler) {
	if o.spent {
		return
	}
	o.buf.Write(o.key(alias))
	m.MarshalGQL(&o.buf)
}

// Field keeps m, the marshaler of a field resolved the gqlgen way, to be
// written in its place with the response. An Object of this package that
// is closed and holds nothing left to resolve (an edge's) is written now
// instead, its bytes already counted against the budget by its Close, and
// then reused: m must not be used after (the generated code only compares
// it with graphql's nulls).
//
// A list (graphql.Array) of such Objects only, the elements of a list the
// plugin writes (a procedure's comments, a page's nodes), is written now
// the same way, each element reused: m must not be used after either.
func (o *Object) Field(alias string, m graphql.Marshaler) {
	if o.spent {
		return
	}
	o.buf.Write(o.key(alias))
	switch v := m.(type) {
	case *Object:
		if o.done(v) {
			o.inline(v)
			return
		}
	case graphql.Array:
		if len(v) > 0 && !slices.ContainsFunc(v, func(e graphql.Marshaler) bool { c, ok := e.(*Object); return !ok || !o.done(c) }) {
			o.buf.WriteByte('[')
			for i, e := range v {
				if i > 0 {
					o.buf.WriteByte(',')
				}
				o.inline(e.(*Object))
			}
			o.buf.WriteByte(']')
			return
		}
	}
	o.parts = append(o.parts, part{end: o.buf.Len(), m: m})
}

// done reports whether c, written into o, is closed with nothing left to
// resolve, its bytes counted against o's budget (Field).
func (o *Object) done(c *Object) bool {
	return c.closed && len(c.parts) == 0 && c.budget == o.budget
}

// inline writes c's bytes into o, counted against the budget once (by c's
// Close: o's count skips them), and offers c for reuse.
func (o *Object) inline(c *Object) {
	o.buf.Write(c.buf.Bytes())
	o.precounted += c.units
	release(c)
}

// Close ends the object and counts it against its budget.
func (o *Object) Close() graphql.Marshaler {
	if !o.spent {
		o.buf.WriteByte('}')
		o.count()
		o.closed = !o.spent
	}
	return o
}

// MarshalGQL writes the object.
func (o *Object) MarshalGQL(w io.Writer) {
	b := o.buf.Bytes()
	start := 0
	for _, p := range o.parts {
		_, _ = w.Write(b[start:p.end])
		p.m.MarshalGQL(w)
		start = p.end
	}
	_, _ = w.Write(b[start:])
}
