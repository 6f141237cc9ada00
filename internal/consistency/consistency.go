// Package consistency is read-your-writes across standbys: a request's
// writes report the workspace version they committed (Wrote), which the
// response carries (the X-Workspace-Version header, GraphQL's
// workspaceVersion extension) and the server remembers per token for a
// while (Recent); a read request (ReadOnly) may then be served by a
// standby only if it has replayed the version the client asks for (the
// X-Min-Version header) or last wrote. docs/operations.md, "Reads from
// standbys", has the rules.
package consistency

import (
	"context"
	"sync/atomic"
)

// Written is the newest workspace version one request's writes committed.
type Written struct{ v atomic.Int64 }

type writtenKey struct{}

// WithWritten returns ctx carrying a fresh Written.
func WithWritten(ctx context.Context) (context.Context, *Written) {
	w := &Written{}
	return context.WithValue(ctx, writtenKey{}, w), w
}

// Wrote records that a write of ctx's request committed its workspace at
// version. It does nothing outside a request with a Written.
func Wrote(ctx context.Context, version int64) {
	w, _ := ctx.Value(writtenKey{}).(*Written)
	if w == nil {
		return
	}
	for {
		cur := w.v.Load()
		if version <= cur || w.v.CompareAndSwap(cur, version) {
			return
		}
	}
}

// Committed is the newest version ctx's request's writes committed, 0 when
// none (or outside a request with a Written).
func Committed(ctx context.Context) int64 {
	if w, _ := ctx.Value(writtenKey{}).(*Written); w != nil {
		return w.Version()
	}
	return 0
}

// Version is the newest version recorded, 0 when the request wrote
// nothing.
func (w *Written) Version() int64 { return w.v.Load() }

type readOnlyKey struct{}

// ReadOnly marks ctx's request as one that only reads (a GraphQL query): its
// reads may go to a standby.
func ReadOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

// IsReadOnly reports whether ReadOnly marked ctx.
func IsReadOnly(ctx context.Context) bool {
	ro, _ := ctx.Value(readOnlyKey{}).(bool)
	return ro
}
