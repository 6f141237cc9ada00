// Package consistency is the read-your-writes rule across standbys: a
// request's writes report the workspace version they committed (Wrote),
// which the response carries and the server remembers per token for a
// while (Recent); a request marked RouteToStandby (a GraphQL query; REST's
// reads are told by their method) may then be served by a standby only if
// it has replayed the version the client asks for or last wrote.
// docs/operations.md, "Reads from standbys", has the rules.
//
// It imports no HTTP package: the core reports its writes here. The HTTP
// side — the X-Workspace-Version and X-Min-Version headers, and the
// middleware that routes a read — is internal/middleware's Reads
// (docs/design.md §1).
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

type standbyKey struct{}

// RouteToStandby marks ctx's request as one that only reads (a GraphQL
// query), so that its reads may be routed to a standby (where the read
// pool's server has replayed what it needs). It is about where a request
// reads, not about what the dataloaders may do (internal/loader's modes).
func RouteToStandby(ctx context.Context) context.Context {
	return context.WithValue(ctx, standbyKey{}, true)
}

// RoutableToStandby reports whether RouteToStandby marked ctx.
func RoutableToStandby(ctx context.Context) bool {
	ok, _ := ctx.Value(standbyKey{}).(bool)
	return ok
}
