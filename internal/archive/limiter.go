package archive

import (
	"sync"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
)

// DefaultInFlight is how many downloads a replica serves at once
// (--exports-in-flight): each holds a database connection and its read
// transaction for as long as it runs (up to --export-timeout), which the
// pool's other requests then do without.
const DefaultInFlight = 2

// Limiter bounds the downloads in flight: at most a total at once, and
// one per workspace (a second download of the same workspace at once is
// the same archive twice). A download over either is refused at once,
// before anything is read, never queued: it would hold its request open
// for as long as the one before it runs.
type Limiter struct {
	mu    sync.Mutex
	total int
	busy  map[uuid.UUID]bool
}

// NewLimiter returns a Limiter of total downloads at once
// (DefaultInFlight if total < 1).
func NewLimiter(total int) *Limiter {
	if total < 1 {
		total = DefaultInFlight
	}
	return &Limiter{total: total, busy: map[uuid.UUID]bool{}}
}

// acquire takes a slot for workspace's download, or refuses it:
// rate_limited when the workspace's own download is running,
// unavailable when every slot is taken.
func (l *Limiter) acquire(workspace uuid.UUID) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.busy[workspace]:
		return nil, apperr.New(apperr.RateLimited, "an export of this workspace is already running: retry when it has ended")
	case len(l.busy) >= l.total:
		return nil, apperr.New(apperr.Unavailable, "this server runs %d workspace exports at once, and that many are running: retry later", l.total)
	}
	l.busy[workspace] = true
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.busy, workspace)
	}, nil
}
