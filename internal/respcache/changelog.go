package respcache

import (
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/internal/core"
)

// The change log keeps, per workspace, the last logSize changes by version,
// for up to logWorkspaces workspaces (the least recently written to are
// forgotten first). A response older than what its workspace's log holds is
// simply computed afresh, so the bounds cost hits, never correctness:
// 256 × 512 slots of about 150 bytes is at most ~20 MB, reached only with
// 512 workspaces written to at once.
const (
	logSize       = 256
	logWorkspaces = 512
)

// changeLog is guarded by Cache.mu.
type changeLog struct {
	workspaces *lru.Cache[uuid.UUID, *workspaceLog]
}

// workspaceLog is a ring of changes: the change of version v, if known,
// is in slot v % logSize with that version.
type workspaceLog struct {
	ring [logSize]loggedChange
}

type loggedChange struct {
	version int64
	change  core.Change
}

func newChangeLog() changeLog {
	workspaces, err := lru.New[uuid.UUID, *workspaceLog](logWorkspaces)
	if err != nil {
		panic(err)
	}
	return changeLog{workspaces: workspaces}
}

func (l changeLog) record(c core.Change, version int64) {
	if version <= 0 {
		return
	}
	w, ok := l.workspaces.Get(c.WorkspaceID)
	if !ok {
		w = &workspaceLog{}
		l.workspaces.Add(c.WorkspaceID, w)
	}
	slot := &w.ring[version%logSize]
	if slot.version < version {
		slot.version, slot.change = version, c
	}
}

// untouched reports whether the log knows every change of the workspace
// after version from up to version to, and none of them touches fp.
func (l changeLog) untouched(workspace uuid.UUID, from, to int64, fp *core.Footprint) bool {
	if to-from > logSize {
		return false
	}
	w, ok := l.workspaces.Peek(workspace)
	if !ok {
		return false
	}
	for v := from + 1; v <= to; v++ {
		slot := &w.ring[v%logSize]
		if slot.version != v || fp.TouchedBy(slot.change) {
			return false
		}
	}
	return true
}
