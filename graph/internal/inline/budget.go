package inline

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// A response is bounded in bytes twice over. The objects this package
// writes hold nearly all of a response's bytes (a procedure's content, a
// comment's text) and write them when they are resolved, long before the
// response is marshalled: each counts what it wrote against its response's
// Budget, and once the budget is spent every object writes nothing more,
// so that a response past its bound is never held in memory. Then the
// response is marshalled through a writer that stops at the bound
// (MarshalInto), which also counts what gqlgen's own marshalers write.
// What the objects counted is always written with the response, so a
// response they find over its bound would be over it when marshalled.

// Budget bounds the bytes of one response. Its objects may be resolved
// concurrently (root fields, lists of elements that wait on loads).
type Budget struct {
	max int
	// asSent counts what objects write as it will be sent (sentLen).
	asSent bool
	spent  atomic.Int64
	passed atomic.Bool

	mu sync.Mutex
	at ast.Path
}

type budgetKey struct{}

// WithBudget returns ctx with a new Budget of max bytes for the response
// the executor renders with it. Its objects count the bytes they write,
// which MarshalInto counts again as they will be sent; with asSent the
// objects count them as sent already, for a response that is not
// marshalled within its bound (a mutation's, bounded field by field).
func WithBudget(ctx context.Context, max int, asSent bool) (context.Context, *Budget) {
	b := &Budget{max: max, asSent: asSent}
	return context.WithValue(ctx, budgetKey{}, b), b
}

// BudgetOf returns the Budget of ctx's response, nil for none.
func BudgetOf(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// Max is the bound, in bytes.
func (b *Budget) Max() int { return b.max }

// Passed reports whether the response went past its bound: it was not
// written in full and must not be sent.
func (b *Budget) Passed() bool { return b.passed.Load() }

// At is the path of the field being written when the response passed its
// bound (nil when it passed while being marshalled).
func (b *Budget) At() ast.Path {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.at
}

// spend counts n bytes and reports whether the response is still within
// its bound; when it is not, path (called once) says where it passed.
func (b *Budget) spend(n int, path func() ast.Path) bool {
	if b.spent.Add(int64(n)) <= int64(b.max) {
		return true
	}
	b.pass(path)
	return false
}

func (b *Budget) pass(path func() ast.Path) {
	if b.passed.Swap(true) || path == nil {
		return
	}
	p := path()
	b.mu.Lock()
	b.at = p
	b.mu.Unlock()
}

// passedBound is the panic that stops a marshal at its bound: marshalers
// have no error to return. MarshalInto recovers it.
type passedBound struct{}

// boundedWriter is buf up to max bytes as sent; a write past them panics.
type boundedWriter struct {
	buf *bytes.Buffer
	max int
	// sent counts what buf's bytes become on the wire (sentLen).
	sent int
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	w.sent += sentLen(p)
	if w.sent > w.max {
		panic(passedBound{})
	}
	return w.buf.Write(p)
}

var lineSep, paraSep = []byte("\u2028"), []byte("\u2029")

// sentLen is the length of p once the transport has encoded the response
// as encoding/json does (graph/gqlhttp/direct_transport.go writes the same bytes): <, > and
// & become \u003c (6 bytes), U+2028 and U+2029 (3) \u2028 (6). Counting
// what is sent keeps a response of such characters from passing its bound
// sixfold on the wire, and in the memory its encoding takes.
func sentLen(p []byte) int {
	n := len(p)
	for _, c := range []byte("<>&") {
		if i := bytes.IndexByte(p, c); i >= 0 {
			n += 5 * bytes.Count(p[i:], []byte{c})
		}
	}
	if bytes.IndexByte(p, 0xE2) >= 0 {
		n += 3 * (bytes.Count(p, lineSep) + bytes.Count(p, paraSep))
	}
	return n
}

// MarshalInto writes m, the data of a response, into buf, within the bound
// of ctx's Budget (unbounded without one). A response past its bound, found
// so while it was resolved or now, is not written: buf is left empty and
// the Budget reports Passed. The bound counts the response as it is sent
// (sentLen).
func MarshalInto(ctx context.Context, buf *bytes.Buffer, m graphql.Marshaler) {
	b := BudgetOf(ctx)
	if b == nil {
		m.MarshalGQL(buf)
		return
	}
	if b.Passed() {
		return
	}
	// What the objects wrote is most of the response.
	buf.Grow(min(int(b.spent.Load())+4096, b.max))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(passedBound); !ok {
				panic(r)
			}
			buf.Reset()
			b.pass(nil)
		}
	}()
	m.MarshalGQL(&boundedWriter{buf: buf, max: b.max})
}
