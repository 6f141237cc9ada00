package core

import (
	"context"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/procsvc/procsvc/internal/viewer"
)

// totals caches the exact count of each (workspace, list, filter) under the
// workspace's write version. Every write bumps the version in its own
// transaction, and the version is read with the token on every request, so a
// cached total is only ever served to a request that observed the same
// version: totals stay exact without counting rows on every list, and
// replicas need no coordination (each keeps its own cache).
// docs/performance.md explains the choice.
type totals struct {
	cache *lru.Cache[totalKey, int]
}

// totalKey identifies one cached total: a list and its filter key, in a
// workspace as of a version.
type totalKey struct {
	workspace uuid.UUID
	version   int64
	list, key string
}

// totalsSize bounds the cache: about 100 bytes an entry.
const totalsSize = 50_000

// WithoutTotalsCache turns the totals cache off: every total is counted
// (or summed from tallies) on every read. Only the benchmarks that weigh
// the cache use it (docs/caching.md).
func WithoutTotalsCache() Option { return func(s *Service) { s.totals = nil } }

func newTotals() *totals {
	c, err := lru.New[totalKey, int](totalsSize)
	if err != nil {
		panic(err)
	}
	return &totals{cache: c}
}

// get returns the total for key, counting (and caching) on a miss. Viewers
// whose workspace version was not read with their token (operator contexts)
// always count.
func (t *totals) get(ctx context.Context, list, key string, count func() (int, error)) (int, error) {
	v := viewer.FromContext(ctx)
	if t == nil || v == nil || !v.VersionKnown {
		return count()
	}
	k := totalKey{workspace: v.WorkspaceID, version: v.WorkspaceVersion, list: list, key: key}
	if n, ok := t.cache.Get(k); ok {
		return n, nil
	}
	n, err := count()
	if err != nil {
		return 0, err
	}
	t.cache.Add(k, n)
	return n, nil
}

// peek returns the cached total for key, if ctx's viewer's version has it.
func (t *totals) peek(ctx context.Context, list, key string) (int, bool) {
	k, ok := t.key(ctx, list, key)
	if !ok {
		return 0, false
	}
	return t.cache.Get(k)
}

// put caches n as the total for key, at ctx's viewer's version.
func (t *totals) put(ctx context.Context, list, key string, n int) {
	if k, ok := t.key(ctx, list, key); ok {
		t.cache.Add(k, n)
	}
}

// key is the cache key of list and key for ctx's viewer; false when the
// viewer's version was not read with its token.
func (t *totals) key(ctx context.Context, list, key string) (totalKey, bool) {
	v := viewer.FromContext(ctx)
	if t == nil || v == nil || !v.VersionKnown {
		return totalKey{}, false
	}
	return totalKey{workspace: v.WorkspaceID, version: v.WorkspaceVersion, list: list, key: key}, true
}
