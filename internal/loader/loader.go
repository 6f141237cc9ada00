// Package loader holds the per-request dataloaders for a procedure's
// category, doer, project and comments (and a comment's author). Each fetch
// function is the one way its edge is read by id; priming a page reads the
// comments (comments.go) and the categories, members and projects together
// (named.go) by hand, and a read-only request may take the latter from what
// other requests of its workspace's version read (shared.go).
//
// Loaders never make a request wait on a timer: whoever fetches a list of
// parents calls Prime with the edges that will be resolved, which runs each
// fetch once, synchronously, and keeps what it read. Field resolvers then
// find every key already loaded and return it without touching a dataloader:
// a dataloader Load allocates a channel and a thunk even for a cached key,
// and a list page resolves hundreds of edges. A key nobody primed still
// works, batched over dataloader's default window.
package loader

import (
	"context"
	"maps"
	"sync"

	"github.com/google/uuid"
	"github.com/graph-gophers/dataloader/v7"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/limits"
)

// Edges says which edges of a list of procedures will be resolved.
type Edges struct {
	Category, Doer, Project, Comments bool
	// CommentWindow is which comments of each procedure Comments reads:
	// every view the selection takes (see CommentWindow.Union); zero is
	// the default view.
	CommentWindow CommentWindow
	// CommentSkip is the columns of comments no view of them shows; the
	// zero value reads every column.
	CommentSkip CommentSkip
	// CommentAuthors also primes the authors of the loaded comments.
	CommentAuthors bool
}

// AllEdges is every edge, as REST responses embed them: the newest
// limits.EmbeddedComments comments, of which REST shows neither the
// author nor the time of the last edit (RESTComments).
var AllEdges = Edges{Category: true, Doer: true, Project: true, Comments: true,
	CommentWindow: CommentWindow{Last: limits.EmbeddedComments}, CommentSkip: RESTComments}

// RESTComments is what REST's embedded comments do not show.
const RESTComments = SkipCommentAuthor | SkipCommentUpdatedAt

// commentsShownKey keys the CommentSkip of ShowingComments.
type commentsShownKey struct{}

// ShowingComments returns ctx telling the resolvers of procedures' comments
// what their callers, which are not GraphQL fields (REST), leave unshown,
// so that comments primed without those columns serve them. Without it a
// resolver outside GraphQL shows every column.
func ShowingComments(ctx context.Context, skip CommentSkip) context.Context {
	return context.WithValue(ctx, commentsShownKey{}, skip)
}

// CommentsShown is the CommentSkip of ShowingComments on ctx, or zero.
func CommentsShown(ctx context.Context) CommentSkip {
	s, _ := ctx.Value(commentsShownKey{}).(CommentSkip)
	return s
}

// fetch reads the values of keys, answering every key: a record id nobody
// can see maps to nil (not an error), a procedure without comments to an
// empty list.
type fetch[V any] func(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]V, error)

// fetchers are the edges' reads through one client, shared by every request
// (the tenancy of each read comes from the context it is given).
type fetchers struct {
	// shared keeps categories, members and projects across read-only
	// requests (shared.go).
	shared *shared
	// names reads categories, members and projects together.
	names      *namedReader
	categories fetch[*ent.Category]
	members    fetch[*ent.Member]
	projects   fetch[*ent.Project]
	// comments reads windows of procedures' comments (comments.go).
	comments func(ctx context.Context, keys []uuid.UUID, w CommentWindow, skip CommentSkip, budget *textBudget, counted map[uuid.UUID]int) (map[uuid.UUID]*commentPage, error)
	// maxCommentText bounds the comment text one request reads, in bytes.
	maxCommentText int
}

// Option tunes the loaders of a Source.
type Option func(*fetchers)

// MaxCommentText bounds the comment text, in bytes, that one request's
// loaders read (a mutation's root field each, since each starts with a
// Reset): past it a read stops with payload_too_large. The default is
// limits.ResponseBytes; the bound of responses (--max-response-mb) is
// what a server gives, since a request cannot show more text than that.
func MaxCommentText(n int) Option {
	return func(f *fetchers) {
		if n > 0 {
			f.maxCommentText = n
		}
	}
}

// CarryShared lets the shared edges (shared.go) kept at one version of a
// workspace answer a later version's requests when unchanged reports that
// no category, member or project of the workspace changed in between
// (the replica's memory of the writes it heard, which the response cache
// also keeps: respcache.Writes.OnlyProcedureWrites). Without it, every
// write of a workspace starts its shared edges afresh.
func CarryShared(unchanged func(workspace uuid.UUID, from, to int64) bool) Option {
	return func(f *fetchers) {
		if f.shared != nil {
			f.shared.unchanged = unchanged
		}
	}
}

// WithoutShared turns off the shared edges (shared.go): every request
// reads its categories, members and projects itself. Only the benchmarks
// that weigh the cache use it (docs/caching.md).
func WithoutShared() Option { return func(f *fetchers) { f.shared = nil } }

func newFetchers(db *database.DB, opts ...Option) *fetchers {
	client := db.Client
	// names read by hand (named.go), as are comments (comments.go).
	names := newNamedReader(db)
	f := &fetchers{
		shared:         newShared(),
		names:          names,
		comments:       commentsFetch(newCommentReader(db)),
		maxCommentText: limits.ResponseBytes,
		categories: byID(func(ctx context.Context, keys []uuid.UUID) ([]*ent.Category, error) {
			return client.Category.Query().Where(category.IDIn(keys...)).All(ctx)
		}, func(c *ent.Category) uuid.UUID { return c.ID }),
		members: byID(func(ctx context.Context, keys []uuid.UUID) ([]*ent.Member, error) {
			return client.Member.Query().Where(member.IDIn(keys...)).All(ctx)
		}, func(m *ent.Member) uuid.UUID { return m.ID }),
		projects: byID(func(ctx context.Context, keys []uuid.UUID) ([]*ent.Project, error) {
			return client.Project.Query().Where(project.IDIn(keys...)).All(ctx)
		}, func(p *ent.Project) uuid.UUID { return p.ID }),
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// byID adapts a fetch of records by id into a fetch that answers every key,
// with nil for ids it could not see.
func byID[V any](read func(context.Context, []uuid.UUID) ([]V, error), id func(V) uuid.UUID) fetch[V] {
	return func(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]V, error) {
		rows, err := read(ctx, keys)
		if err != nil {
			return nil, err
		}
		found := make(map[uuid.UUID]V, len(keys))
		for _, k := range keys {
			var zero V
			found[k] = zero
		}
		for _, r := range rows {
			found[id(r)] = r
		}
		return found, nil
	}
}

// batchFunc adapts f to dataloader's batch function, for keys nobody primed.
func (f fetch[V]) batchFunc() dataloader.BatchFunc[uuid.UUID, V] {
	return func(ctx context.Context, keys []uuid.UUID) []*dataloader.Result[V] {
		found, err := f(ctx, keys)
		out := make([]*dataloader.Result[V], len(keys))
		for i, k := range keys {
			out[i] = &dataloader.Result[V]{Data: found[k], Error: err}
		}
		return out
	}
}

// edge is what one request loaded of one edge.
type edge[V any] struct {
	// loaded holds every primed key.
	loaded map[uuid.UUID]V
	// batched serves keys nobody primed; made on first need.
	batched *dataloader.Loader[uuid.UUID, V]
}

// Loaders are one request's dataloaders. They cache for the request's life
// and must not be shared between requests (each carries its viewer's tenancy).
type Loaders struct {
	fetch *fetchers
	// mu guards the edges; GraphQL resolves sibling fields concurrently.
	mu         sync.RWMutex
	categories edge[*ent.Category]
	members    edge[*ent.Member]
	projects   edge[*ent.Project]
	comments   commentEdge
	// commentText is what this request (or, for a mutation, this root
	// field) has read of comment text; made afresh by Reset.
	commentText *textBudget
	// sharedMode is set by SharedMode: where primed categories, members and
	// projects may come from the shared cache.
	sharedMode *at
	// nested holds the nested lists, by question (nested.go).
	nested map[string]*nestedBatch
}

type ctxKey struct{}

// Source makes loaders reading through one database. Its loaders share
// what read-only requests of a workspace's version read (shared.go), so a
// server builds one Source and takes every request's loaders from it.
type Source struct{ f *fetchers }

// New returns the Source of loaders reading through db.
func New(db *database.DB, opts ...Option) *Source { return &Source{f: newFetchers(db, opts...)} }

// Into returns ctx with fresh loaders of its own, for one request or any
// other unit of work (a live-update event's rendering, which has no HTTP
// request): nothing cached by the loaders of another context is seen
// through them, and what they read of comment text is counted afresh
// against the response bound. The reads are
// scoped to the viewer's workspace by ent's tenancy interceptor, through
// the context of each read (or by hand, for the statements comments.go and
// named.go write).
func (s *Source) Into(ctx context.Context) context.Context {
	l := &Loaders{fetch: s.f, commentText: &textBudget{bound: s.f.maxCommentText}}
	return context.WithValue(ctx, ctxKey{}, l)
}

func from(ctx context.Context) *Loaders {
	l, _ := ctx.Value(ctxKey{}).(*Loaders)
	if l == nil {
		panic("loader: no loaders in context; give it a Source's Into (loader.Middleware over HTTP)")
	}
	return l
}

// Reset forgets everything the request's loaders have loaded or primed, so
// that reads after a write see it. A GraphQL mutation runs its root fields
// one after another; each starts with a Reset so that it never renders an
// edge loaded before an earlier root field changed it.
func Reset(ctx context.Context) {
	l, _ := ctx.Value(ctxKey{}).(*Loaders)
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.categories, l.members, l.projects, l.comments = edge[*ent.Category]{}, edge[*ent.Member]{}, edge[*ent.Project]{}, commentEdge{}
	l.commentText = &textBudget{bound: l.fetch.maxCommentText}
	l.nested = nil
	// A write follows: the version the request read is no longer its
	// workspace's.
	l.sharedMode = nil
}

// Category returns the category with id (nil when the viewer cannot see it).
func Category(ctx context.Context, id uuid.UUID) (*ent.Category, error) {
	l := from(ctx)
	return load(ctx, l, &l.categories, l.fetch.categories, id)
}

// Member returns the member with id (nil when the viewer cannot see it).
func Member(ctx context.Context, id uuid.UUID) (*ent.Member, error) {
	l := from(ctx)
	return load(ctx, l, &l.members, l.fetch.members, id)
}

// Project returns the project with id (nil when the viewer cannot see it).
func Project(ctx context.Context, id uuid.UUID) (*ent.Project, error) {
	l := from(ctx)
	return load(ctx, l, &l.projects, l.fetch.projects, id)
}

// Comments returns the comments of the procedure with id that w takes,
// oldest first, with every column a view that skips skip shows, and how
// many comments it holds: from what was primed when it holds them, else
// read through a batching dataloader (which reads every window a view may
// take, every column).
func Comments(ctx context.Context, procedureID uuid.UUID, w CommentWindow, skip CommentSkip) ([]*ent.Comment, int, error) {
	l := from(ctx)
	l.mu.RLock()
	p, ok := l.comments.loaded[procedureID]
	b, budget := l.comments.batched, l.commentText
	l.mu.RUnlock()
	if ok && p.serves(w, skip) {
		return p.view(w), p.total, nil
	}
	if b == nil {
		l.mu.Lock()
		if l.comments.batched == nil {
			f := l.fetch.comments
			l.comments.batched = dataloader.NewBatchedLoader(func(ctx context.Context, keys []uuid.UUID) []*dataloader.Result[*commentPage] {
				found, err := f(ctx, keys, everyView, 0, budget, nil)
				out := make([]*dataloader.Result[*commentPage], len(keys))
				for i, k := range keys {
					out[i] = &dataloader.Result[*commentPage]{Data: found[k], Error: err}
				}
				return out
			})
		}
		b = l.comments.batched
		l.mu.Unlock()
	}
	p, err := b.Load(ctx, procedureID)()
	if err != nil {
		return nil, 0, err
	}
	return p.view(w), p.total, nil
}

// everyView is the window that covers every view of a procedure's comments
// (limits.CommentPage bounds first and last).
var everyView = CommentWindow{First: limits.CommentPage, Last: limits.CommentPage}

// commentEdge is what one request loaded of procedures' comments.
type commentEdge struct {
	// loaded holds every primed procedure's page.
	loaded map[uuid.UUID]*commentPage
	// batched serves views nobody primed; made on first need.
	batched *dataloader.Loader[uuid.UUID, *commentPage]
}

// load answers key from what was primed, else through e's dataloader.
func load[V any](ctx context.Context, l *Loaders, e *edge[V], f fetch[V], key uuid.UUID) (V, error) {
	l.mu.RLock()
	v, ok := e.loaded[key]
	b := e.batched
	l.mu.RUnlock()
	if ok {
		return v, nil
	}
	if b == nil {
		l.mu.Lock()
		if e.batched == nil {
			e.batched = dataloader.NewBatchedLoader(f.batchFunc())
		}
		b = e.batched
		l.mu.Unlock()
	}
	return b.Load(ctx, key)()
}

// PrimeProcedures loads the requested edges of procs before any field
// resolver asks for them: the comments in one statement, the categories,
// members and projects together in another (none when the shared cache
// holds them all).
func PrimeProcedures(ctx context.Context, procs []*ent.Procedure, edges Edges) error {
	return primeProcedures(ctx, procs, edges, false)
}

// PrimeListed is PrimeProcedures for procedures as a list of core read
// them, every list reading each row's comment_count with it: a procedure
// it counted without comments has none read, and those of no more than
// the window takes have them read without being looked up again
// (commentsFetch), about half the statement's time for a page of
// procedures holding few. The count must be the one read with the row: that of a
// procedure read earlier, or without the column, may have changed since.
func PrimeListed(ctx context.Context, procs []*ent.Procedure, edges Edges) error {
	return primeProcedures(ctx, procs, edges, true)
}

func primeProcedures(ctx context.Context, procs []*ent.Procedure, edges Edges, listed bool) error {
	if len(procs) == 0 {
		return nil
	}
	l := from(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	var cats, people, projs, procIDs []uuid.UUID
	var counted map[uuid.UUID]int
	if listed && edges.Comments {
		counted = make(map[uuid.UUID]int, len(procs))
	}
	window := edges.CommentWindow.normal()
	for _, p := range procs {
		if edges.Category && p.CategoryID != nil {
			cats = append(cats, *p.CategoryID)
		}
		if edges.Doer && p.DoerID != nil {
			people = append(people, *p.DoerID)
		}
		if edges.Project {
			projs = append(projs, p.ProjectID)
		}
		if edges.Comments {
			procIDs = append(procIDs, p.ID)
			if counted != nil {
				counted[p.ID] = p.CommentCount
			}
		}
	}
	if err := l.primeComments(ctx, procIDs, window, edges.CommentSkip, counted); err != nil {
		return err
	}
	if edges.CommentAuthors {
		for _, id := range procIDs {
			if p := l.comments.loaded[id]; p != nil {
				for _, c := range p.rows {
					people = append(people, c.AuthorID)
				}
			}
		}
	}
	return l.primeNamed(ctx, namedKeys{categories: cats, members: people, projects: projs})
}

// primeComments reads, in one statement (a second only when counts grew
// past what they promised: commentsFetch), the comments w takes, without
// the columns skip leaves out, of the procedures keys whose primed page
// does not serve that already. A page read again replaces the one primed
// before, so the read also takes every comment and column that one held.
// counted is what the procedures' own read counted of their comments, nil
// when unknown. The caller holds l.mu.
func (l *Loaders) primeComments(ctx context.Context, keys []uuid.UUID, w CommentWindow, skip CommentSkip, counted map[uuid.UUID]int) error {
	var todo []uuid.UUID
	seen := make(map[uuid.UUID]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		p, ok := l.comments.loaded[k]
		if ok && p.serves(w, skip) {
			continue
		}
		if ok {
			w, skip = w.Union(p.window), skip&p.skip
		}
		todo = append(todo, k)
	}
	if len(todo) == 0 {
		return nil
	}
	found, err := l.fetch.comments(ctx, todo, w, skip, l.commentText, counted)
	if err != nil {
		return err
	}
	if l.comments.loaded == nil {
		l.comments.loaded = found
		return nil
	}
	maps.Copy(l.comments.loaded, found)
	return nil
}

// PrimeMembers loads members by id in one statement, for lists whose items
// name members (comment authors, token owners).
func PrimeMembers(ctx context.Context, memberIDs []uuid.UUID) error {
	l := from(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.primeNamed(ctx, namedKeys{members: memberIDs})
}

// primeNamed loads the categories, members and projects of k that l has
// not loaded yet: from the shared cache when the request is read-only at
// ctx's version (shared.go), the rest in one statement (named.go). The
// caller holds l.mu.
func (l *Loaders) primeNamed(ctx context.Context, k namedKeys) error {
	k = namedKeys{categories: todo(&l.categories, k.categories), members: todo(&l.members, k.members), projects: todo(&l.projects, k.projects)}
	if k.empty() {
		return nil
	}
	a := l.sharedAt(ctx)
	if a != nil && l.fetch.shared == nil {
		a = nil // WithoutShared
	}
	if a != nil {
		if k = l.fetch.shared.take(a, l, k); k.empty() {
			return nil
		}
	}
	found, err := l.fetch.readNamed(ctx, k)
	if err != nil {
		return err
	}
	keep(&l.categories, found.categories)
	keep(&l.members, found.members)
	keep(&l.projects, found.projects)
	if a != nil {
		l.fetch.shared.put(a, found)
	}
	return nil
}

// todo returns keys without duplicates and without those e has loaded.
func todo[V any](e *edge[V], keys []uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	seen := make(map[uuid.UUID]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		if _, ok := e.loaded[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// keep adds found to what e has loaded.
func keep[V any](e *edge[V], found map[uuid.UUID]V) {
	if len(found) == 0 {
		return
	}
	if e.loaded == nil {
		e.loaded = found
		return
	}
	maps.Copy(e.loaded, found)
}

// readNamed reads the records of k, answering every key (nil for a record
// the viewer cannot see): in one statement through names, else (the system
// context) one per edge.
func (f *fetchers) readNamed(ctx context.Context, k namedKeys) (named, error) {
	if found, ok, err := f.names.read(ctx, k); ok {
		return found, err
	}
	var (
		found named
		err   error
	)
	if len(k.categories) > 0 {
		if found.categories, err = f.categories(ctx, k.categories); err != nil {
			return named{}, err
		}
	}
	if len(k.projects) > 0 {
		if found.projects, err = f.projects(ctx, k.projects); err != nil {
			return named{}, err
		}
	}
	if len(k.members) > 0 {
		if found.members, err = f.members(ctx, k.members); err != nil {
			return named{}, err
		}
	}
	return found, nil
}

// Snapshot is what a request's loaders have primed, detached from the
// request: a live-update event reads its procedure's edges once and every
// subscriber of the workspace renders from them (graph/live). Its maps are
// never written after Export.
type Snapshot struct {
	categories map[uuid.UUID]*ent.Category
	members    map[uuid.UUID]*ent.Member
	projects   map[uuid.UUID]*ent.Project
	comments   map[uuid.UUID]*commentPage
}

// Export copies what ctx's loaders have primed into a Snapshot.
func Export(ctx context.Context) *Snapshot {
	l := from(ctx)
	l.mu.RLock()
	defer l.mu.RUnlock()
	return &Snapshot{categories: maps.Clone(l.categories.loaded), members: maps.Clone(l.members.loaded),
		projects: maps.Clone(l.projects.loaded), comments: maps.Clone(l.comments.loaded)}
}

// Size estimates the bytes s holds in memory: its records' text and a
// fixed overhead per record (the struct, its ids and times, the map entry).
// It is what a cache keeping s counts against its bound.
func (s *Snapshot) Size() int {
	const perRecord = 256
	n := 0
	for _, c := range s.categories {
		if c != nil {
			n += perRecord + len(c.Name)
		}
	}
	for _, m := range s.members {
		if m != nil {
			n += perRecord + len(m.Name) + len(m.Email)
		}
	}
	for _, p := range s.projects {
		if p != nil {
			n += perRecord + len(p.Name)
		}
	}
	for _, page := range s.comments {
		n += perRecord
		if page == nil {
			continue
		}
		for _, c := range page.rows {
			n += perRecord + len(c.Text)
		}
	}
	return n
}

// Seed primes ctx's loaders with s, with no statement: fields resolved
// after it find s's records as if they had been primed by this request.
// s is only read (each loader copies what it takes), so one Snapshot may
// seed many requests at once.
func (s *Snapshot) Seed(ctx context.Context) {
	l := from(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	seed(&l.categories, s.categories)
	seed(&l.members, s.members)
	seed(&l.projects, s.projects)
	if len(s.comments) > 0 {
		if l.comments.loaded == nil {
			l.comments.loaded = make(map[uuid.UUID]*commentPage, len(s.comments))
		}
		maps.Copy(l.comments.loaded, s.comments)
	}
}

func seed[V any](e *edge[V], from map[uuid.UUID]V) {
	if len(from) == 0 {
		return
	}
	if e.loaded == nil {
		e.loaded = make(map[uuid.UUID]V, len(from))
	}
	maps.Copy(e.loaded, from)
}
