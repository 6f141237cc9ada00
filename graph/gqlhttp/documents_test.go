package gqlhttp

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/procsvc/procsvc/internal/viewer"
)

// as is a context of a viewer of workspace ws.
func as(ws uuid.UUID) context.Context {
	return viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: ws, MemberID: uuid.New(), Role: viewer.RoleMember})
}

// query is a persisted query's text charged n bytes.
func query(n int, tag string) (hash, text string) {
	hash = fmt.Sprintf("%064s", tag)
	return hash, tag + strings.Repeat("#", n-bytesPerEntry-len(hash)-len(tag))
}

func TestDocuments(t *testing.T) {
	t.Run("AWorkspacePastItsShareDropsItsOwn", func(t *testing.T) {
		d := NewDocuments(10_000, 2_000)
		a, b := uuid.New(), uuid.New()
		persisted := d.Persisted()
		hashA, textA := query(1_500, "a")
		persisted.Add(as(a), hashA, textA)
		for i := range 50 {
			h, q := query(600, fmt.Sprint("b", i))
			persisted.Add(as(b), h, q)
			if held := d.HeldBy(b); held > d.Share() {
				t.Fatalf("b holds %d, past its share", held)
			}
		}
		if got, ok := persisted.Get(as(a), hashA); !ok || got != textA {
			t.Fatal("b's entries evicted a's")
		}
		// b keeps its newest (three of 600 bytes fit its 2 000).
		for i := 47; i < 50; i++ {
			if _, ok := persisted.Get(as(b), fmt.Sprintf("%064s", fmt.Sprint("b", i))); !ok {
				t.Fatalf("b's entry %d is not kept", i)
			}
		}
		if _, ok := persisted.Get(as(b), fmt.Sprintf("%064s", "b46")); ok {
			t.Fatal("b holds more than its share")
		}
	})
	t.Run("AtTheCeilingTheLeastRecentlyUsedWorkspaceGivesBack", func(t *testing.T) {
		d := NewDocuments(3_000, 1_000)
		persisted := d.Persisted()
		ws := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
		for i := range 3 {
			h, q := query(1_000, fmt.Sprint("w", i))
			persisted.Add(as(ws[i]), h, q)
		}
		// ws[0] is used again: ws[1] is now the least recently used.
		if _, ok := persisted.Get(as(ws[0]), fmt.Sprintf("%064s", "w0")); !ok {
			t.Fatal("w0 not kept")
		}
		h, q := query(1_000, "w3")
		persisted.Add(as(ws[3]), h, q)
		for i, want := range []bool{true, false, true, true} {
			if _, ok := persisted.Get(as(ws[i]), fmt.Sprintf("%064s", fmt.Sprint("w", i))); ok != want {
				t.Fatalf("workspace %d kept: %v, want %v", i, ok, want)
			}
		}
		if d.Stats().Bytes != 3_000 {
			t.Fatalf("held %d", d.Stats().Bytes)
		}
	})
	t.Run("AnEntryLargerThanAShareIsNotKept", func(t *testing.T) {
		d := NewDocuments(10_000, 1_000)
		a := uuid.New()
		h, q := query(1_001, "big")
		d.Persisted().Add(as(a), h, q)
		if _, ok := d.Persisted().Get(as(a), h); ok || d.Stats().Bytes != 0 {
			t.Fatalf("kept an entry over the share: %d bytes", d.Stats().Bytes)
		}
	})
	t.Run("WithoutAViewerNothingIsReadOrKept", func(t *testing.T) {
		d := NewDocuments(10_000, 1_000)
		h, q := query(500, "anon")
		d.Persisted().Add(context.Background(), h, q)
		if _, ok := d.Persisted().Get(context.Background(), h); ok || d.Stats() != (DocumentStats{}) {
			t.Fatalf("a context without a viewer reached the cache: %+v", d.Stats())
		}
	})
	t.Run("AWorkspaceReadsOnlyItsOwn", func(t *testing.T) {
		d := NewDocuments(10_000, 1_000)
		h, q := query(500, "mine")
		d.Persisted().Add(as(uuid.New()), h, q)
		if _, ok := d.Persisted().Get(as(uuid.New()), h); ok {
			t.Fatal("another workspace read the entry")
		}
	})
	t.Run("KindsAndReplacementsAreApart", func(t *testing.T) {
		d := NewDocuments(100_000, 50_000)
		ctx := as(uuid.New())
		text := "{ __typename }"
		doc, err := parser.ParseQuery(&ast.Source{Input: text})
		if err != nil {
			t.Fatal(err)
		}
		d.Parsed().Add(ctx, text, doc)
		if _, ok := d.Persisted().Get(ctx, text); ok {
			t.Fatal("a parsed document's key found a persisted query")
		}
		held := d.Stats().Bytes
		d.Parsed().Add(ctx, text, doc)
		if d.Stats().Bytes != held {
			t.Fatalf("the same entry added twice is charged %d, once %d", d.Stats().Bytes, held)
		}
		if got, ok := d.Parsed().Get(ctx, text); !ok || got != doc {
			t.Fatal("the parsed document is not kept")
		}
	})
	t.Run("ConcurrentUseStaysWithinTheBounds", func(t *testing.T) {
		d := NewDocuments(20_000, 5_000)
		ws := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()}
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := as(ws[g%len(ws)])
				for i := range 300 {
					h, q := query(400+(i%7)*200, fmt.Sprint(g, "-", i%40))
					d.Persisted().Add(ctx, h, q)
					d.Persisted().Get(ctx, h)
					if held := d.Stats().Bytes; held > d.Ceiling() {
						t.Errorf("held %d past the ceiling", held)
						return
					}
				}
			}()
		}
		wg.Wait()
		var sum int64
		for _, w := range ws {
			if held := d.HeldBy(w); held > d.Share() {
				t.Fatalf("a workspace holds %d, past its share", held)
			}
			sum += d.HeldBy(w)
		}
		if sum != d.Stats().Bytes {
			t.Fatalf("workspaces hold %d together, the budget %d", sum, d.Stats().Bytes)
		}
	})
}

// documentShapes are documents of every shape whose parsed size differs:
// the largest a body carries (~900 KB) as a comment, a plain string, a
// string of escapes, a block string, long aliases; the densest (a list of
// 14 000 values, 90 aliased lists of fields); an ordinary list query and
// the introspection query.
func documentShapes() map[string]string {
	large := strings.Repeat("x", 900_000)
	values := strings.Repeat(`"a" `, 14_000)
	var aliases, fields []string
	for i := range 100 {
		aliases = append(aliases, fmt.Sprintf("a%d%s: viewer { id }", i, strings.Repeat("y", 9000)))
	}
	for i := range 90 {
		fields = append(fields, fmt.Sprintf(`p%d: procedures(first: 1, filter: {search: "s", states: [TODO, WAITING]}) { totalCount nodes { id name shortId state priority dueAt } }`, i))
	}
	typeRef := "kind name"
	for range 9 {
		typeRef = "kind name ofType { " + typeRef + " }"
	}
	return map[string]string{
		"Comment":     "# " + large + "\n{ viewer { id } }",
		"String":      `{ procedures(filter: {search: "` + large + `"}) { totalCount } }`,
		"Escapes":     `{ procedures(filter: {search: "` + strings.Repeat(`\u00e9`, 150_000) + `"}) { totalCount } }`,
		"BlockString": `{ procedures(filter: {search: """` + large + `"""}) { totalCount } }`,
		"LongAliases": "{ " + strings.Join(aliases, " ") + " }",
		"DenseList":   `{ nodes(ids: [` + values + `]) { id } }`,
		"DenseFields": "{ " + strings.Join(fields, " ") + " }",
		"Ordinary":    `query List($first: Int, $after: String) { procedures(first: $first, after: $after, orderBy: {field: DUE_AT}) { totalCount pageInfo { hasNextPage endCursor } nodes { id shortId name state priority dueAt doer { id name } category { id name } project { id name } } } }`,
		"Introspection": `query IntrospectionQuery { __schema { queryType { name kind } mutationType { name kind } types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { ` + typeRef + ` }`,
	}
}

// TestDocumentSizesAreUpperBounds parses and validates each shape of
// document, keeping copies, and compares the heap's growth per copy (its
// text allocated beforehand) with what the cache charges beyond the text:
// the charge is never less, and at most 2.25 times the text and AST
// together (a plain string is counted as if the parser had copied it, with
// an allocator's eighth).
func TestDocumentSizesAreUpperBounds(t *testing.T) {
	schema := PublishedSchema()
	shapes := documentShapes()
	// Validation builds some of its tables at its first use: not a
	// document's.
	for _, text := range shapes {
		doc, _ := parser.ParseQueryWithTokenLimit(&ast.Source{Input: text}, MaxTokens)
		validator.ValidateWithRules(schema, doc, validationRules())
	}
	for name, text := range shapes {
		t.Run(name, func(t *testing.T) {
			const copies = 20
			texts := make([]string, copies)
			for i := range texts {
				texts[i] = strings.Clone(text)
			}
			docs := make([]*ast.QueryDocument, copies)
			var before, after runtime.MemStats
			// Twice: what the previous shape left is then swept.
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i, q := range texts {
				doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: q}, MaxTokens)
				if err != nil {
					t.Fatal(err)
				}
				if errs := validator.ValidateWithRules(schema, doc, validationRules()); len(errs) > 0 {
					t.Fatalf("not a valid document: %v", errs[0])
				}
				docs[i] = doc
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(docs)
			grown := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / copies
			charged := float64(documentBytes(docs[0]))
			t.Logf("%d bytes of text: the heap grew %.0f bytes, %.2f times the text; charged %.0f beyond the text", len(text), grown, grown/float64(len(text)), charged)
			if charged < grown {
				t.Fatalf("charged %.0f bytes beyond the text, the heap grew %.0f", charged, grown)
			}
			if whole := float64(len(text)); charged+whole > 2.25*(grown+whole) {
				t.Fatalf("charged %.0f bytes with the text, more than 2.25 times the %.0f held", charged+whole, grown+whole)
			}
		})
	}
}

// BenchmarkParsedDocuments: what a cached document saves, an ordinary
// query and the introspection query parsed and validated (a miss) against
// found in the cache (a hit).
func BenchmarkParsedDocuments(b *testing.B) {
	schema := PublishedSchema()
	shapes := documentShapes()
	for _, name := range []string{"Ordinary", "Introspection"} {
		text := shapes[name]
		b.Run(name+"/ParseAndValidate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: text}, MaxTokens)
				if err != nil {
					b.Fatal(err)
				}
				if errs := validator.ValidateWithRules(schema, doc, validationRules()); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
		b.Run(name+"/Cached", func(b *testing.B) {
			d := NewDocuments(0, 0)
			ctx := as(uuid.New())
			doc, _ := parser.ParseQuery(&ast.Source{Input: text})
			d.Parsed().Add(ctx, text, doc)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := d.Parsed().Get(ctx, text); !ok {
					b.Fatal("not cached")
				}
			}
		})
	}
}
