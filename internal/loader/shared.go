package loader

import (
	"context"
	"sync"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/viewer"
)

// A list page names few categories, members and projects, and the same ones
// page after page; they are small rows that rarely change. shared keeps what
// read-only requests read of them, per workspace, under the workspace's
// write version (docs/performance.md, "caches keyed by the workspace's write
// version"): every write of a workspace, of any record, bumps its version in
// the write's own transaction, and a request reads the version with its
// token, so an entry of version v is only ever served to requests that read
// v. Its records were read after v was (by requests that read v), so they
// are never older than v; a request that overlaps the write of v+1 may be
// served the newer record, as it could have read it itself. A request that
// reads v+1 starts the workspace's entry afresh, and later requests of v
// neither use nor fill it. Comments are not kept: they are a page's largest
// edge and change with most writes.
//
// Only requests that declared themselves read-only (SharedMode) use it: a
// request that writes has moved its workspace past the version it read, and
// must see its own write.
type shared struct {
	// unchanged reports whether no category, member or project of the
	// workspace changed after version from up to version to, as far as
	// the replica knows (nil: never), so that an entry moves on to a later
	// version rather than start afresh (CarryShared).
	unchanged func(workspace uuid.UUID, from, to int64) bool

	mu         sync.Mutex
	workspaces *lru.Cache[uuid.UUID, *sharedEntry]
	// records is how many records the entries hold, bounded by
	// sharedRecords: the least recently used workspaces are dropped first.
	records int
}

// sharedEntry is what is known of one workspace at one version. An id that
// maps to nil is not visible in the workspace at that version.
type sharedEntry struct {
	version    int64
	categories map[uuid.UUID]*ent.Category
	members    map[uuid.UUID]*ent.Member
	projects   map[uuid.UUID]*ent.Project
}

func (e *sharedEntry) size() int { return len(e.categories) + len(e.members) + len(e.projects) }

// sharedWorkspaces and sharedRecords bound the cache: about 300 bytes a
// record, so at most ~6 MB.
const (
	sharedWorkspaces = 1024
	sharedRecords    = 20_000
)

func newShared() *shared {
	s := &shared{}
	c, err := lru.NewWithEvict[uuid.UUID, *sharedEntry](sharedWorkspaces, func(_ uuid.UUID, e *sharedEntry) {
		s.records -= e.size() // under s.mu: evictions only happen in s's calls
	})
	if err != nil {
		panic(err)
	}
	s.workspaces = c
	return s
}

// at is the workspace and version a read-only request's reads are cached
// under.
type at struct {
	workspace uuid.UUID
	version   int64
}

// SharedMode puts the loaders of ctx in shared mode (the one other mode is
// private, every request's start), which declares that the request of ctx
// makes no write: its loaders may then answer categories, members and
// projects from what other requests of the same workspace read at the same
// version. It has no effect on a
// request whose version was not read with its token (a token's first use
// in a minute writes), nor after Reset, which a write precedes.
func SharedMode(ctx context.Context) {
	l, _ := ctx.Value(ctxKey{}).(*Loaders)
	v := viewer.FromContext(ctx)
	if l == nil || v == nil || !v.VersionKnown || viewer.IsSystem(ctx) {
		return
	}
	l.mu.Lock()
	l.sharedMode = &at{workspace: v.WorkspaceID, version: v.WorkspaceVersion}
	l.mu.Unlock()
}

// sharedAt returns where l's reads through ctx may be cached, or nil. The
// reads of ctx must be scoped to the very workspace and version that
// SharedMode recorded: ctx's viewer is what scopes them, and the cache is
// keyed by it. The caller holds l.mu.
func (l *Loaders) sharedAt(ctx context.Context) *at {
	a := l.sharedMode
	if a == nil || viewer.IsSystem(ctx) {
		return nil
	}
	v := viewer.FromContext(ctx)
	if v == nil || !v.VersionKnown || v.WorkspaceID != a.workspace || v.WorkspaceVersion != a.version {
		return nil
	}
	return a
}

// take answers from a's entry the keys of k it holds, into l's loaders,
// and returns the keys it does not hold. The caller holds l.mu.
func (s *shared) take(a *at, l *Loaders, k namedKeys) namedKeys {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.workspaces.Get(a.workspace)
	if !ok || e.version > a.version {
		return k
	}
	if e.version < a.version {
		if s.unchanged == nil || !s.unchanged(a.workspace, e.version, a.version) {
			return k
		}
		// Its records answer at a.version too; requests of the older
		// versions neither use nor fill it from now on, as when a
		// request of a.version starts it afresh.
		e.version = a.version
	}
	return namedKeys{
		categories: takeInto(&l.categories, e.categories, k.categories),
		members:    takeInto(&l.members, e.members, k.members),
		projects:   takeInto(&l.projects, e.projects, k.projects),
	}
}

func takeInto[V any](into *edge[V], from map[uuid.UUID]V, keys []uuid.UUID) (missing []uuid.UUID) {
	for _, k := range keys {
		v, ok := from[k]
		if !ok {
			missing = append(missing, k)
			continue
		}
		if into.loaded == nil {
			into.loaded = make(map[uuid.UUID]V, len(keys))
		}
		into.loaded[k] = v
	}
	return missing
}

// put keeps what was read in a's entry, unless the workspace's entry has
// moved to a later version, within the bound on records. Only records of
// a's workspace are kept: tenancy scoped the read to it, and a record of
// another is never kept under it, whatever read it.
func (s *shared) put(a *at, read named) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.workspaces.Get(a.workspace)
	switch {
	case ok && e.version > a.version:
		return
	case !ok || e.version < a.version:
		if ok {
			s.workspaces.Remove(a.workspace)
		}
		e = &sharedEntry{version: a.version}
		s.workspaces.Add(a.workspace, e)
	}
	s.records += putInto(&e.categories, read.categories, a.workspace, func(c *ent.Category) uuid.UUID { return c.WorkspaceID })
	s.records += putInto(&e.members, read.members, a.workspace, func(m *ent.Member) uuid.UUID { return m.WorkspaceID })
	s.records += putInto(&e.projects, read.projects, a.workspace, func(p *ent.Project) uuid.UUID { return p.WorkspaceID })
	for s.records > sharedRecords && s.workspaces.Len() > 0 {
		s.workspaces.RemoveOldest()
	}
}

// putInto adds read to *m and returns how many records it added; nil
// records (not visible in the workspace) are kept as such.
func putInto[V comparable](m *map[uuid.UUID]V, read map[uuid.UUID]V, workspace uuid.UUID, owner func(V) uuid.UUID) int {
	if len(read) == 0 {
		return 0
	}
	if *m == nil {
		*m = make(map[uuid.UUID]V, len(read))
	}
	var zero V
	added := 0
	for k, v := range read {
		if v != zero && owner(v) != workspace {
			continue
		}
		if _, ok := (*m)[k]; !ok {
			(*m)[k] = v
			added++
		}
	}
	return added
}
