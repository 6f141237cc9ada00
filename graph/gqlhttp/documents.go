package gqlhttp

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/graph/gqlrequest"
	"github.com/procsvc/procsvc/internal/memory"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Defaults of the document caches' bounds (--document-cache-mb,
// --document-cache-workspace-mb): a workspace's share holds a few hundred
// ordinary operations (an app's list query parses to ~7 KB, the
// playground's introspection query to ~20 KB), or the largest document a
// body carries (1 MiB); the ceiling holds eight workspaces' full shares.
const (
	DefaultDocumentCacheBytes          = 16 << 20
	DefaultDocumentCacheWorkspaceBytes = 2 << 20
)

// Documents is what a replica keeps of the GraphQL documents clients send:
// each workspace's parsed and validated documents (gqlgen's query cache)
// and its persisted queries (automatic persisted queries), in one
// least-recently-used list per workspace, accounted in bytes by a
// memory.Budget (docs/caching.md): a share per workspace, a ceiling for the
// replica. A workspace is the owner because its viewers are who send the
// documents (a tenant's persisted query, whose text may hold its data as
// literals, can neither be run nor detected by another).
//
//   - A workspace past its share makes room by dropping its own least
//     recently used entries, never another workspace's.
//   - A replica at its ceiling makes room by dropping the least recently
//     used entry of the workspace used least recently (idle workspaces
//     give their memory back first). No workspace holds more than its
//     share, so the others together always keep the ceiling less one
//     share.
//   - An entry larger than a share is not kept.
//   - A request without a viewer reaches nothing: /graphql authenticates
//     before it reads a body (guard), a WebSocket before its first
//     operation, so an anonymous client never gets here, and a context
//     without a viewer neither reads nor stores.
//
// It is safe for concurrent use.
type Documents struct {
	budget *memory.Budget[uuid.UUID]

	mu         sync.Mutex
	workspaces map[uuid.UUID]*workspaceDocuments
	// recency orders the workspaces holding entries, most recently used
	// first (values *workspaceDocuments).
	recency list.List

	hits, misses [documentKinds]atomic.Int64
}

// NewDocuments returns the document caches of a replica holding at most
// ceiling bytes, and share bytes per workspace (0: the defaults). share
// must not pass ceiling.
func NewDocuments(ceiling, share int64) *Documents {
	if ceiling == 0 {
		ceiling = DefaultDocumentCacheBytes
	}
	if share == 0 {
		share = min(DefaultDocumentCacheWorkspaceBytes, ceiling)
	}
	return &Documents{budget: memory.NewBudget[uuid.UUID](ceiling, share), workspaces: map[uuid.UUID]*workspaceDocuments{}}
}

// documentKind tells the two caches' entries apart: a persisted query's
// key (a hash) never names a parsed document.
type documentKind uint8

const (
	parsedDocument documentKind = iota
	persistedQuery
	documentKinds
)

type documentKey struct {
	kind documentKind
	key  string
}

// documentEntry is one cached value with the bytes it is charged.
type documentEntry struct {
	key   documentKey
	value any
	size  int64
}

// workspaceDocuments is one workspace's entries, most recently used first.
type workspaceDocuments struct {
	id      uuid.UUID
	entries map[documentKey]*list.Element // values *documentEntry
	lru     list.List
	place   *list.Element // in Documents.recency
}

// Parsed is the cache of parsed and validated documents, keyed by their
// text, that gqlgen's executor (SetQueryCache), the document limits and
// the guard read.
func (d *Documents) Parsed() graphql.Cache[*ast.QueryDocument] {
	return documentCache[*ast.QueryDocument]{d: d, kind: parsedDocument, size: parsedSize}
}

// Persisted is the cache of persisted queries' texts, keyed by their hash,
// of gqlgen's AutomaticPersistedQuery.
func (d *Documents) Persisted() graphql.Cache[string] {
	return documentCache[string]{d: d, kind: persistedQuery, size: persistedSize}
}

// DocumentStats are the document caches' figures.
type DocumentStats struct {
	// Bytes is what every workspace's entries are charged together.
	Bytes int64
	// The lookups of parsed documents and of persisted queries that found
	// what they looked for, and those that did not (a lookup without a
	// viewer is neither).
	ParsedHits, ParsedMisses, PersistedHits, PersistedMisses int64
}

// Stats returns the caches' figures.
func (d *Documents) Stats() DocumentStats {
	return DocumentStats{Bytes: d.budget.Held(),
		ParsedHits: d.hits[parsedDocument].Load(), ParsedMisses: d.misses[parsedDocument].Load(),
		PersistedHits: d.hits[persistedQuery].Load(), PersistedMisses: d.misses[persistedQuery].Load()}
}

// HeldBy returns the bytes workspace's entries are charged.
func (d *Documents) HeldBy(workspace uuid.UUID) int64 { return d.budget.HeldBy(workspace) }

// Share and Ceiling return the bounds.
func (d *Documents) Share() int64   { return d.budget.Share() }
func (d *Documents) Ceiling() int64 { return d.budget.Ceiling() }

// documentCache is one kind of Documents' entries as gqlgen's Cache.
type documentCache[T any] struct {
	d    *Documents
	kind documentKind
	size func(key string, value T) int64
}

func (c documentCache[T]) Get(ctx context.Context, key string) (T, bool) {
	v, ok := c.d.get(ctx, documentKey{c.kind, key})
	if !ok {
		var none T
		return none, false
	}
	return v.(T), true
}

func (c documentCache[T]) Add(ctx context.Context, key string, value T) {
	c.d.add(ctx, documentKey{c.kind, key}, value, c.size(key, value))
}

func (d *Documents) get(ctx context.Context, k documentKey) (any, bool) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var el *list.Element
	ws := d.workspaces[v.WorkspaceID]
	if ws != nil {
		el = ws.entries[k]
	}
	if el == nil {
		d.misses[k.kind].Add(1)
		return nil, false
	}
	ws.lru.MoveToFront(el)
	d.recency.MoveToFront(ws.place)
	d.hits[k.kind].Add(1)
	return el.Value.(*documentEntry).value, true
}

func (d *Documents) add(ctx context.Context, k documentKey, value any, size int64) {
	v := viewer.FromContext(ctx)
	if v == nil || size > d.budget.Share() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ws := d.workspaces[v.WorkspaceID]; ws != nil {
		if el := ws.entries[k]; el != nil {
			d.drop(ws, el)
		}
	}
	for {
		ownerFits, replicaFits := d.budget.Fits(v.WorkspaceID, size)
		if ownerFits && replicaFits {
			break
		}
		// Past its share, the workspace holds something to drop (an
		// owner holding nothing always fits); at the ceiling, some
		// workspace does (size is within a share, a share within the
		// ceiling).
		victim := d.workspaces[v.WorkspaceID]
		if ownerFits {
			victim = d.recency.Back().Value.(*workspaceDocuments)
		}
		d.drop(victim, victim.lru.Back())
	}
	if !d.budget.Reserve(v.WorkspaceID, size) {
		panic("gqlhttp: a document cache's reservation refused after making room")
	}
	ws := d.workspaces[v.WorkspaceID]
	if ws == nil {
		ws = &workspaceDocuments{id: v.WorkspaceID, entries: map[documentKey]*list.Element{}}
		ws.place = d.recency.PushFront(ws)
		d.workspaces[v.WorkspaceID] = ws
	} else {
		d.recency.MoveToFront(ws.place)
	}
	ws.entries[k] = ws.lru.PushFront(&documentEntry{key: k, value: value, size: size})
}

// drop removes el from ws, and ws once it holds nothing.
func (d *Documents) drop(ws *workspaceDocuments, el *list.Element) {
	e := ws.lru.Remove(el).(*documentEntry)
	delete(ws.entries, e.key)
	d.budget.Release(ws.id, e.size)
	if ws.lru.Len() == 0 {
		d.recency.Remove(ws.place)
		delete(d.workspaces, ws.id)
	}
}

// What an entry is charged, measured (TestDocumentSizesAreUpperBounds):
// parsing and validating documents of many shapes, the heap grows by the
// text (kept: the AST points into it, and it is the key), by each node of
// the AST with its position (a field, an operation or a fragment up to 230
// bytes; a value, a list element, an argument or a directive up to 110),
// and by the strings the parser copies out of the text (block strings,
// strings with escapes: at most the text's length again, rounded up to the
// allocator's size classes). A ~900 KB
// document is ~900 KB of heap when it is a comment or a plain string (the
// AST points into the text), ~1.8 MB when it is a block string; a 56 KB
// list of 14 000 values is ~3 MB (54 times its text); an ordinary
// 265-byte list query ~7 KB (26 times). So a factor of the text's length
// either undercounts dense documents or overcounts large ones many times:
// the charge is counted from the document, in one walk of its nodes.
const (
	// bytesPerSelection is charged for each field, fragment spread,
	// inline fragment, operation, fragment and variable definition.
	bytesPerSelection = 256
	// bytesPerValue is charged for each value (each element of a list or
	// object too), argument and directive.
	bytesPerValue = 128
	// bytesPerEntry is what an entry costs beyond its key and value: its
	// map slot, list element and record.
	bytesPerEntry = 256
)

// parsedSize is what a parsed document of query is charged: its text, its
// nodes and the strings parsed out of it.
func parsedSize(query string, doc *ast.QueryDocument) int64 {
	return int64(len(query)) + documentBytes(doc) + bytesPerEntry
}

// persistedSize is what a persisted query is charged: its hash and text.
func persistedSize(hash, query string) int64 {
	return int64(len(hash)) + int64(len(query)) + bytesPerEntry
}

// documentBytes is what doc holds beyond its text: its nodes, and its
// string values and descriptions (which the parser may have copied out of
// the text; counted even when it did not).
func documentBytes(doc *ast.QueryDocument) int64 {
	n := int64(bytesPerSelection)
	node := func(bytes int64) func() { return func() { n += bytes } }
	gqlrequest.WalkDocument(doc, gqlrequest.Visitor{
		Definition: func(description string) { n += bytesPerSelection + int64(len(description)) },
		Variable:   node(bytesPerSelection),
		Selection:  node(bytesPerSelection),
		Directive:  node(bytesPerValue),
		Argument:   node(bytesPerValue),
		Child:      node(bytesPerValue),
		Value: func(v *ast.Value) {
			n += bytesPerValue
			if v.Kind == ast.StringValue || v.Kind == ast.BlockValue {
				// An eighth more: the allocator rounds a copy up to its
				// size class (a large one to whole pages).
				n += int64(len(v.Raw) + len(v.Raw)/8)
			}
		},
	})
	return n
}
