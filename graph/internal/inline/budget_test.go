package inline

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Objects count what they write against their response's budget, and once
// it is spent they hold nothing and write nothing more: what a response
// over its bound holds in memory stays near the bound, however many objects
// follow.
func TestObjectsStopAtTheBudget(t *testing.T) {
	const bound = 1 << 20
	ctx, b := WithBudget(context.Background(), bound, false)
	long := strings.Repeat("x", 100_000)
	var objects []*Object
	held := func() int {
		n := 0
		for _, o := range objects {
			n += o.buf.Len()
		}
		return n
	}
	for range 50 {
		o := New(ctx, 64)
		o.String("content", long)
		o.String("name", "short")
		o.Close()
		objects = append(objects, o)
	}
	if !b.Passed() {
		t.Fatal("5 MB of objects within a budget of 1 MiB")
	}
	if n := held(); n > bound+len(long) {
		t.Fatalf("objects hold %d bytes past a budget of %d", n, bound)
	}
	// Objects made after the budget passed hold nothing at all.
	o := New(ctx, 64)
	o.String("content", long)
	o.Close()
	if o.buf.Len() != 0 {
		t.Fatalf("an object made once the budget passed holds %d bytes", o.buf.Len())
	}
	// One object repeating a long field under many aliases stops too.
	ctx, b = WithBudget(context.Background(), bound, false)
	o = New(ctx, 64)
	for range 100 {
		o.String("a", long)
	}
	if !b.Passed() || o.buf.Len() != 0 {
		t.Fatalf("one object of 100 long fields: passed %v, holds %d bytes", b.Passed(), o.buf.Len())
	}
}

// The budget is where the bound passed: the field's path and the alias
// written last.
func TestBudgetRecordsWhereItPassed(t *testing.T) {
	ctx, b := WithBudget(context.Background(), 10, false)
	ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Field: graphql.CollectedField{Field: &ast.Field{Alias: "update"}}})
	o := New(ctx, 8)
	o.String("name", strings.Repeat("y", 20))
	o.Close()
	if got := b.At(); len(got) != 2 || got[0] != ast.PathName("update") || got[1] != ast.PathName("name") {
		t.Fatalf("passed at %v, want [update name]", got)
	}
}

// An edge's object is made with its parent's context (NewEdge): where the
// bound passed is still below the edge's field.
func TestBudgetRecordsWhereItPassedBelowAnEdge(t *testing.T) {
	ctx, b := WithBudget(context.Background(), 10, false)
	ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Field: graphql.CollectedField{Field: &ast.Field{Alias: "update"}}})
	o := NewEdge(ctx, "category", 8)
	o.String("name", strings.Repeat("y", 20))
	o.Close()
	want := ast.Path{ast.PathName("update"), ast.PathName("category"), ast.PathName("name")}
	if got := b.At(); got.String() != want.String() {
		t.Fatalf("passed at %v, want %v", got, want)
	}
}

// A list element's object is made with the list's parent's context
// (NewElement): where the bound passed is the element's place in the list.
func TestBudgetRecordsWhereItPassedInAListElement(t *testing.T) {
	ctx, b := WithBudget(context.Background(), 10, false)
	ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Field: graphql.CollectedField{Field: &ast.Field{Alias: "comments"}}})
	o := NewElement(ctx, "nodes", 2, 8)
	o.String("text", strings.Repeat("y", 20))
	o.Close()
	want := ast.Path{ast.PathName("comments"), ast.PathName("nodes"), ast.PathIndex(2), ast.PathName("text")}
	if got := b.At(); got.String() != want.String() {
		t.Fatalf("passed at %v, want %v", got, want)
	}
}

// chunks writes n chunks of size bytes (of c, z by default), counting
// what it wrote.
type chunks struct {
	n, size int
	c       byte
	written int
}

func (c *chunks) MarshalGQL(w io.Writer) {
	b := c.c
	if b == 0 {
		b = 'z'
	}
	p := bytes.Repeat([]byte{b}, c.size)
	for range c.n {
		_, _ = w.Write(p)
		c.written += c.size
	}
}

// MarshalInto stops writing at the bound, rather than render the whole
// response and throw it away.
func TestMarshalIntoStopsAtTheBound(t *testing.T) {
	const bound = 64 << 10
	ctx, b := WithBudget(context.Background(), bound, false)
	var buf bytes.Buffer
	m := &chunks{n: 10_000, size: 1024} // 10 MB
	MarshalInto(ctx, &buf, m)
	if !b.Passed() || buf.Len() != 0 {
		t.Fatalf("passed %v, %d bytes kept", b.Passed(), buf.Len())
	}
	if m.written > bound {
		t.Fatalf("the marshal wrote %d bytes before it stopped at %d", m.written, bound)
	}
	// What is sent counts: < is sent as \u003c, six bytes.
	ctx, b = WithBudget(context.Background(), bound, false)
	buf.Reset()
	m = &chunks{n: 64, size: 1024, c: '<'}
	MarshalInto(ctx, &buf, m)
	if !b.Passed() || m.written > bound/6+1024 {
		t.Fatalf("64 KiB of < (384 KiB sent): passed %v after %d bytes", b.Passed(), m.written)
	}
	// Within the bound it writes everything; without a budget, unbounded.
	ctx, b = WithBudget(context.Background(), bound, false)
	buf.Reset()
	MarshalInto(ctx, &buf, &chunks{n: 64, size: 1024})
	if b.Passed() || buf.Len() != bound {
		t.Fatalf("at the bound: passed %v, %d bytes", b.Passed(), buf.Len())
	}
	buf.Reset()
	MarshalInto(context.Background(), &buf, &chunks{n: 200, size: 1024})
	if buf.Len() != 200<<10 {
		t.Fatalf("without a budget: %d bytes", buf.Len())
	}
	// Other panics go on.
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v", r)
		}
	}()
	ctx, _ = WithBudget(context.Background(), bound, false)
	MarshalInto(ctx, &buf, panicking{})
}

type panicking struct{}

func (panicking) MarshalGQL(io.Writer) { panic("boom") }

// Concurrent objects (root fields resolve at once) share one budget.
func TestBudgetIsShared(t *testing.T) {
	const bound = 1 << 20
	ctx, b := WithBudget(context.Background(), bound, false)
	long := strings.Repeat("x", 10_000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				o := New(ctx, 64)
				o.String("t", long)
				o.Close()
			}
		}()
	}
	wg.Wait()
	if !b.Passed() {
		t.Fatal("1.6 MB from 8 goroutines within a budget of 1 MiB")
	}
}

// A budget counting as sent (a mutation's, never marshalled within its
// bound) counts what the transport's escaping makes of < > &.
func TestBudgetCountsAsSent(t *testing.T) {
	html := strings.Repeat("<", 1000) // 6 000 bytes sent
	for _, asSent := range []bool{false, true} {
		ctx, b := WithBudget(context.Background(), 5000, asSent)
		o := New(ctx, 8)
		o.String("t", html)
		o.Close()
		if b.Passed() != asSent {
			t.Errorf("as sent %v: 1 000 < within 5 000 bytes: passed %v", asSent, b.Passed())
		}
	}
	if n := sentLen([]byte("a<b>c&d\u2028e")); n != 11+3*5+3 {
		t.Fatalf("sentLen %d", n)
	}
}
