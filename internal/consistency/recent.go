package consistency

import (
	"sync"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
)

// RecentTokens bounds the tokens Recent remembers at once; beyond it the
// least recently written is forgotten first (its reads then need
// X-Min-Version to be sure of seeing its writes on a standby).
const RecentTokens = 50_000

// Recent remembers, for a while, the last version each token wrote.
type Recent struct {
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	byTok  *lru.Cache[uuid.UUID, remembered]
}

type remembered struct {
	version int64
	until   time.Time
}

// NewRecent remembers each token's last write for window (0: a Recent that
// remembers nothing).
func NewRecent(window time.Duration) *Recent {
	c, err := lru.New[uuid.UUID, remembered](RecentTokens)
	if err != nil {
		panic(err)
	}
	return &Recent{window: window, now: time.Now, byTok: c}
}

// Wrote remembers that token's request committed version.
func (r *Recent) Wrote(token uuid.UUID, version int64) {
	if r == nil || r.window <= 0 || version <= 0 || token == uuid.Nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.byTok.Get(token); ok && prev.version > version {
		version = prev.version
	}
	r.byTok.Add(token, remembered{version: version, until: r.now().Add(r.window)})
}

// Min is the version token last wrote, if within the window, else 0.
func (r *Recent) Min(token uuid.UUID) int64 {
	if r == nil || r.window <= 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.byTok.Get(token)
	if !ok {
		return 0
	}
	if r.now().After(m.until) {
		r.byTok.Remove(token)
		return 0
	}
	return m.version
}
