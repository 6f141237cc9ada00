package archive

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/middleware"
)

// ContentType is the export's media type: JSON Lines.
const ContentType = "application/x-ndjson"

// Path is the export's route on the REST face (docs/api.md, "Workspace
// export").
const Path = "/workspace/export"

// Handler serves GET Path: the archive of the authenticated admin's
// workspace (middleware.Authenticate has put the viewer in the request's
// context), streamed as Export reads it. It is an ordinary request, under
// the server's write timeout: a client that stops reading holds a page and
// the socket's buffers until the timeout fails its write, which ends the
// export and its read transaction. An error before the first byte is
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
		var body io.Writer = w
		if r.Method == http.MethodHead {
			// The headers only: the snapshot is taken (so that the admin
			// check and the version are real), nothing more is read.
			body = headOnly{}
		}
		out, err := Export(r.Context(), client, body, o)
		if err == nil || errors.Is(err, errHeadOnly) {
			return
		}
		if !started {
			middleware.WriteError(w, r, log, err)
			return
		}
		log.WarnContext(r.Context(), "workspace export ended before its trailer", "request_id", middleware.RequestID(r.Context()),
			"workspace_id", out.Header.WorkspaceID.String(), "error", err.Error())
		panic(http.ErrAbortHandler)
	})
}

// errHeadOnly ends the export of a HEAD request at its first line.
var errHeadOnly = errors.New("archive: HEAD request")

// headOnly is the body of a HEAD request: none.
type headOnly struct{}

func (headOnly) Write([]byte) (int, error) { return 0, errHeadOnly }
