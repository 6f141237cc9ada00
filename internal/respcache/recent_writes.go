package respcache

import (
	"sync"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/internal/core"
)

// The recent writes (not the change log of internal/core: this replica's
// memory of the notifications it heard) keep, per workspace, the last
// recentSize writes by version, for up to recentWorkspaces workspaces (the
// least recently written to are forgotten first). A response older than
// what its workspace's ring holds is
// simply computed afresh, so the bounds cost hits, never correctness:
// 256 × 512 slots of about 150 bytes is at most ~20 MB, reached only with
// 512 workspaces written to at once.
const (
	recentSize       = 256
	recentWorkspaces = 512
)

// Writes is a replica's memory of the recent writes (Observe), safe for
// concurrent use: the response cache's, which the loaders' shared records
// consult too (OnlyProcedureWrites). Its lock is taken last: under the
// hub's (Observe), the cache's (fresh) or the loaders' (their shared
// records), never the other way.
type Writes struct {
	mu         sync.Mutex
	workspaces *lru.Cache[uuid.UUID, *workspaceWrites]
}

// workspaceWrites is a ring of changes: the change of version v, if known,
// is in slot v % recentSize with that version.
type workspaceWrites struct {
	ring [recentSize]recentWrite
}

type recentWrite struct {
	version int64
	change  core.Change
}

// NewWrites returns an empty memory of writes.
func NewWrites() *Writes {
	workspaces, err := lru.New[uuid.UUID, *workspaceWrites](recentWorkspaces)
	if err != nil {
		panic(err)
	}
	return &Writes{workspaces: workspaces}
}

// Observe records a committed change of the workspace at version, from the
// replica's change feed (internal/events: Hub.Observe). A change heard
// twice is recorded once.
func (r *Writes) Observe(c core.Change, version int64) {
	if r == nil || version <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.workspaces.Get(c.WorkspaceID)
	if !ok {
		w = &workspaceWrites{}
		r.workspaces.Add(c.WorkspaceID, w)
	}
	slot := &w.ring[version%recentSize]
	if slot.version < version {
		slot.version, slot.change = version, c
	}
}

// untouched reports whether r knows every change of the workspace
// after version from up to version to, and none of them touches fp.
func (r *Writes) untouched(workspace uuid.UUID, from, to int64, fp *core.Footprint) bool {
	return r.each(workspace, from, to, func(c core.Change) bool { return !fp.TouchedBy(c) })
}

// OnlyProcedureWrites reports whether the replica heard every write of the
// workspace after version from up to version to, and each was a write of
// a procedure or of its comments (core.Change.OfProcedure), which changes
// no category, member or project: what the loaders' shared records
// (internal/loader, shared.go) read at from still answer at to. A write it
// did not hear (not yet, or one that announces nothing, as every write of
// a category, member, project or token does) says no.
func (r *Writes) OnlyProcedureWrites(workspace uuid.UUID, from, to int64) bool {
	return r.each(workspace, from, to, core.Change.OfProcedure)
}

// each reports whether r knows every change of the workspace after
// version from up to version to, and ok holds for each of them.
func (r *Writes) each(workspace uuid.UUID, from, to int64, ok func(core.Change) bool) bool {
	if r == nil || to-from > recentSize {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, found := r.workspaces.Peek(workspace)
	if !found {
		return false
	}
	for v := from + 1; v <= to; v++ {
		slot := &w.ring[v%recentSize]
		if slot.version != v || !ok(slot.change) {
			return false
		}
	}
	return true
}
