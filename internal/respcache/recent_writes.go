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
	// pending is not nil while the change's transaction has not yet
	// answered its commit (Pending): the change is then not known, only
	// expected, and a reader waits for pending.done rather than use it.
	pending *pendingWrite
}

// pendingWrite is a change recorded before its commit (Writes.Pending).
type pendingWrite struct {
	done     chan struct{}
	resolved bool // under Writes.mu
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
	// A notification is of a committed change: it replaces a pending one
	// of the same version, whether that is the same change heard before
	// its writer's answer, or one whose commit failed and whose version
	// another replica's write then committed.
	r.record(c, version, nil)
}

// record puts c in its workspace's slot of version, pending unless p is
// nil, over an older version's change or a pending one of the same
// version (never over a committed one: a change heard twice is recorded
// once).
func (r *Writes) record(c core.Change, version int64, p *pendingWrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.workspaces.Get(c.WorkspaceID)
	if !ok {
		w = &workspaceWrites{}
		r.workspaces.Add(c.WorkspaceID, w)
	}
	slot := &w.ring[version%recentSize]
	if slot.version < version || (slot.version == version && slot.pending != nil) {
		slot.version, slot.change, slot.pending = version, c, p
	}
}

// Pending records, before its commit, the change a write of this replica
// is about to commit at version, and returns how the write reports its
// commit's outcome (committed or not: failed, rolled back or unknown),
// exactly once. A committed change is then known as if Observed; any other
// outcome forgets it.
//
// Why: PostgreSQL (or SQLite) makes a commit visible to every reader's
// token lookup before its writer has the answer. A reader that observed
// that version in the meantime would find it unknown and recompute its
// response, although the write may leave the response alone: on a
// saturated machine a third of the failed checks of the REST mix were
// that. With the change pending, the reader waits for the writer's answer
// instead (Cache.fresh, at most pendingWait), and never uses a pending
// change: one whose commit failed is forgotten, and a later write of the
// same version (this replica's, once the failed one has released the
// workspace, or another replica's, heard through its notification)
// replaces it.
func (r *Writes) Pending(c core.Change, version int64) (resolve func(committed bool)) {
	if r == nil || version <= 0 {
		return func(bool) {}
	}
	p := &pendingWrite{done: make(chan struct{})}
	r.record(c, version, p)
	return func(committed bool) { r.resolve(c.WorkspaceID, version, p, committed) }
}

// resolve ends p, the pending change of version: known if committed,
// forgotten otherwise (unless a notification or a later write replaced it
// meanwhile), and its waiters woken.
func (r *Writes) resolve(workspace uuid.UUID, version int64, p *pendingWrite, committed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.resolved {
		return
	}
	p.resolved = true
	defer close(p.done)
	w, ok := r.workspaces.Peek(workspace)
	if !ok {
		return
	}
	slot := &w.ring[version%recentSize]
	if slot.pending != p {
		return
	}
	if committed {
		slot.pending = nil
		return
	}
	*slot = recentWrite{}
}

// untouched reports whether r knows every change of the workspace
// after version from up to version to, and none of them touches fp. When
// it does not know one because its commit has not answered yet (Pending),
// wait is closed once it has, and the question may be asked again.
func (r *Writes) untouched(workspace uuid.UUID, from, to int64, fp *core.Footprint) (ok bool, wait <-chan struct{}) {
	return r.each(workspace, from, to, func(c core.Change) bool { return !fp.TouchedBy(c) })
}

// OnlyProcedureWrites reports whether the replica heard every write of the
// workspace after version from up to version to, and each was a write of
// a procedure or of its comments (core.Change.OfProcedure), which changes
// no category, member or project: what the loaders' shared records
// (internal/loader, shared.go) read at from still answer at to. A write it
// did not hear (not yet, or one that announces nothing, as every write of
// a category, member, project or token does) says no.
//
// A change still pending says no as well: the loaders ask under their
// shared records' lock, where no request may wait.
func (r *Writes) OnlyProcedureWrites(workspace uuid.UUID, from, to int64) bool {
	ok, _ := r.each(workspace, from, to, core.Change.OfProcedure)
	return ok
}

// each reports whether r knows every change of the workspace after
// version from up to version to, and ok holds for each of them. A change
// pending (recorded before its commit answered) is not known: each then
// also returns the channel its writer closes once it has the answer.
func (r *Writes) each(workspace uuid.UUID, from, to int64, ok func(core.Change) bool) (bool, <-chan struct{}) {
	if r == nil || to-from > recentSize {
		return false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, found := r.workspaces.Peek(workspace)
	if !found {
		return false, nil
	}
	var wait <-chan struct{}
	for v := from + 1; v <= to; v++ {
		slot := &w.ring[v%recentSize]
		switch {
		case slot.version != v:
			return false, nil
		case slot.pending != nil:
			// Worth waiting for only if every known change says yes.
			if wait == nil {
				wait = slot.pending.done
			}
		case !ok(slot.change):
			return false, nil
		}
	}
	return wait == nil, wait
}
