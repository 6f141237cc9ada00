package respcache

import (
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

// recentWrites is guarded by Cache.mu.
type recentWrites struct {
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

func newRecentWrites() recentWrites {
	workspaces, err := lru.New[uuid.UUID, *workspaceWrites](recentWorkspaces)
	if err != nil {
		panic(err)
	}
	return recentWrites{workspaces: workspaces}
}

func (r recentWrites) record(c core.Change, version int64) {
	if version <= 0 {
		return
	}
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
func (r recentWrites) untouched(workspace uuid.UUID, from, to int64, fp *core.Footprint) bool {
	if to-from > recentSize {
		return false
	}
	w, ok := r.workspaces.Peek(workspace)
	if !ok {
		return false
	}
	for v := from + 1; v <= to; v++ {
		slot := &w.ring[v%recentSize]
		if slot.version != v || fp.TouchedBy(slot.change) {
			return false
		}
	}
	return true
}
