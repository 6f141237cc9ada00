package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// ContentType is the export's media type: JSON Lines.
const ContentType = "application/x-ndjson"

// Path is the export's route on the REST face (docs/api.md, "Workspace
// export").
const Path = "/workspace/export"

// Handler serves GET Path: the archive of the authenticated admin's
// workspace (middleware.Authenticate has put the viewer in the request's
// context), streamed as Export reads it. A client that stops reading holds
// a page and the socket's buffers until a write times out, which ends the
// export and its read transaction: with opts.IdleTimeout, a write that
// blocks that long (so a large workspace downloads over a slow link as
// long as the client keeps reading, until opts.Timeout), else the server's
// write timeout over the whole download. An error before the first byte is
// answered with the error body (forbidden for a member or a viewer); one
// after it aborts the response, so that the client sees a broken transfer
// (and the import a missing trailer), never a clean end.
func Handler(client *ent.Client, log *slog.Logger, opts ExportOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := false
		o := opts
		o.Started = func(h Header) {
			started = true
			w.Header().Set("Content-Type", ContentType)
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="workspace-%s-v%d.jsonl"`, h.WorkspaceID, h.WorkspaceVersion))
			w.WriteHeader(http.StatusOK)
			if opts.Started != nil {
				opts.Started(h)
			}
		}
		ctx := r.Context()
		// Only an admin's download takes a slot: anyone else's is
		// refused by Export before anything is read.
		if v := viewer.FromContext(ctx); opts.Limiter != nil && v != nil && v.Role.AtLeast(viewer.RoleAdmin) {
			release, err := opts.Limiter.acquire(v.WorkspaceID)
			if err != nil {
				w.Header().Set("Retry-After", "30")
				middleware.WriteError(w, r, log, err)
				return
			}
			defer release()
		}
		var body io.Writer = w
		if opts.IdleTimeout > 0 {
			// The request's deadline (just short of the server's write
			// timeout) gives way to the download's own bounds.
			var cancel context.CancelFunc
			ctx, cancel = middleware.WithoutDeadline(ctx)
			defer cancel()
			timeout := opts.Timeout
			if timeout <= 0 {
				timeout = DefaultTimeout
			}
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
			body = &idleDeadline{w: w, rc: http.NewResponseController(w), idle: opts.IdleTimeout}
		}
		if r.Method == http.MethodHead {
			// The headers only: the snapshot is taken (so that the admin
			// check and the version are real), nothing more is read.
			body = headOnly{}
		}
		out, err := Export(ctx, client, body, o)
		if err == nil || errors.Is(err, errHeadOnly) {
			return
		}
		if !started {
			middleware.WriteError(w, r, log, err)
			return
		}
		log.WarnContext(ctx, "workspace export ended before its trailer", "request_id", middleware.RequestID(r.Context()),
			"workspace_id", out.Header.WorkspaceID.String(), "error", err.Error())
		panic(http.ErrAbortHandler)
	})
}

// errHeadOnly ends the export of a HEAD request at its first line.
var errHeadOnly = errors.New("archive: HEAD request")

// headOnly is the body of a HEAD request: none.
type headOnly struct{}

func (headOnly) Write([]byte) (int, error) { return 0, errHeadOnly }

// idleDeadline moves the connection's write deadline to idle ahead as the
// download is written, so that only a write that blocks for idle (a client
// that stopped taking the archive) fails. The deadline is moved at most
// every quarter of idle: each write has at least three quarters of it.
type idleDeadline struct {
	w    io.Writer
	rc   *http.ResponseController
	idle time.Duration
	set  time.Time
}

func (d *idleDeadline) Write(p []byte) (int, error) {
	if now := time.Now(); now.Sub(d.set) >= d.idle/4 {
		// Not supported (a writer that does not unwrap to the
		// connection): the server's write timeout stays in force.
		if err := d.rc.SetWriteDeadline(now.Add(d.idle)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return 0, err
		}
		d.set = now
	}
	return d.w.Write(p)
}
