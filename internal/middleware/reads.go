package middleware

// Read-your-writes over HTTP: the headers, and where a read request goes.
// The rule it applies — the version a request's writes committed, the
// token memory, which requests may read a standby — is
// internal/consistency's, below the faces and the core (docs/design.md §1:
// the core imports no HTTP package).

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/consistency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Header names (docs/api.md, "Reading your writes").
const (
	// VersionHeader answers a request that wrote: the workspace version
	// its last write committed.
	VersionHeader = "X-Workspace-Version"
	// MinVersionHeader asks that a read see at least this version.
	MinVersionHeader = "X-Min-Version"
)

// ReadPool is where reads may go: the database's read pool (database.DB).
type ReadPool interface {
	HasReadPool() bool
	ReadsAt(ctx context.Context, workspaceID uuid.UUID) (context.Context, int64, bool)
}

// Reads routes read requests to standbys, and reports writes' versions.
type Reads struct {
	store  ReadPool
	recent *consistency.Recent
	// Read requests with a read pool, by where they read (Routed).
	standby, behind, unanswered atomic.Int64
}

// Routed counts, since the start, the read requests made while there is a
// read pool: those its standby served, those that read the primary because
// the standby had not replayed the version they needed, and those that read
// the primary because the read pool did not answer.
type Routed struct{ Standby, Behind, Unanswered int64 }

// Routed returns the counts of where read requests went.
func (rd *Reads) Routed() Routed {
	return Routed{Standby: rd.standby.Load(), Behind: rd.behind.Load(), Unanswered: rd.unanswered.Load()}
}

// NewReads returns the router of store's reads; recent may be nil.
func NewReads(store ReadPool, recent *consistency.Recent) *Reads {
	return &Reads{store: store, recent: recent}
}

// Middleware runs after authentication. Every request gets a
// consistency.Written; the version its writes committed is sent in
// VersionHeader and remembered for its token. A read request — REST's GET
// and HEAD, a GraphQL request marked consistency.RouteToStandby — goes to
// the read pool when there is one and its server has replayed the version
// the request needs: MinVersionHeader, and its token's last write
// (consistency.Recent). Its viewer then carries the version read there, so
// that every cache keys the response by the version the request actually
// read. Otherwise it reads the primary, as without a read pool. A
// MinVersionHeader that is not a whole number from 0 is refused
// bad_request, on any request.
func (rd *Reads) Middleware(writeErr func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			min, err := minVersion(r)
			if err != nil {
				writeErr(w, r, err)
				return
			}
			ctx, written := consistency.WithWritten(r.Context())
			v := viewer.FromContext(ctx)
			if v != nil && rd.store.HasReadPool() && (r.Method == http.MethodGet || r.Method == http.MethodHead || consistency.RoutableToStandby(ctx)) {
				min = max(min, rd.recent.Min(v.Credential()))
				switch rctx, version, ok := rd.store.ReadsAt(ctx, v.WorkspaceID); {
				case !ok:
					rd.unanswered.Add(1)
				case version < min:
					rd.behind.Add(1)
				default:
					rd.standby.Add(1)
					read := *v
					read.WorkspaceVersion = version
					ctx = viewer.NewContext(rctx, &read)
				}
			}
			next.ServeHTTP(&versionWriter{ResponseWriter: w, written: written}, r.WithContext(ctx))
			if v != nil {
				rd.recent.Wrote(v.Credential(), written.Version())
			}
		})
	}
}

func minVersion(r *http.Request) (int64, error) {
	raw := r.Header.Get(MinVersionHeader)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.New(apperr.BadRequest, "%s must be a workspace version: a whole number from 0, as %s gave", MinVersionHeader, VersionHeader)
	}
	return n, nil
}

// versionWriter adds VersionHeader to the response of a request that
// wrote, as its status is written (the writes have committed by then).
type versionWriter struct {
	http.ResponseWriter
	written *consistency.Written
	done    bool
}

func (vw *versionWriter) WriteHeader(code int) {
	if !vw.done {
		vw.done = true
		if v := vw.written.Version(); v > 0 {
			vw.Header().Set(VersionHeader, strconv.FormatInt(v, 10))
		}
	}
	vw.ResponseWriter.WriteHeader(code)
}

func (vw *versionWriter) Write(b []byte) (int, error) {
	if !vw.done {
		vw.WriteHeader(http.StatusOK)
	}
	return vw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (vw *versionWriter) Unwrap() http.ResponseWriter { return vw.ResponseWriter }

// Flush passes a flush on.
func (vw *versionWriter) Flush() {
	if f, ok := vw.ResponseWriter.(http.Flusher); ok {
		if !vw.done {
			vw.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}
