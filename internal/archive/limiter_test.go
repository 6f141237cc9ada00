package archive_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestDownloadsInFlightAreBounded: each download holds a database
// connection and its read transaction while it runs, so a replica serves
// at most its limit at once, one per workspace: a second download of a
// workspace whose download runs is refused with rate_limited, one past the
// limit with unavailable, both at once (never queued) and with a
// Retry-After; a member's refused download takes no slot; once the
// running one ends, its slot is free.
func TestDownloadsInFlightAreBounded(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	s := apitest.Start(t, db)
	one := s.NewWorkspace(t, "One", "ONE")
	two := s.NewWorkspace(t, "Two", "TWO")
	ctxOf := func(w *apitest.Workspace) context.Context {
		ctx, err := s.Service.ActAsAdmin(context.Background(), w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	running := make(chan struct{})
	release := make(chan struct{})
	hold := true
	h := archive.Handler(db.Client, slog.New(slog.NewTextHandler(io.Discard, nil)), archive.ExportOptions{
		Dialect: db.Dialect, Limiter: archive.NewLimiter(1),
		Started: func(archive.Header) {
			if hold {
				close(running)
				<-release
			}
		},
	})
	get := func(ctx context.Context) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, archive.Path, nil).WithContext(ctx))
		return rec
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- get(ctxOf(one)) }()
	<-running // the first download holds the only slot
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		status int
		code   string
	}{
		{"the same workspace again", ctxOf(one), http.StatusTooManyRequests, "rate_limited"},
		{"another workspace, past the limit", ctxOf(two), http.StatusServiceUnavailable, "unavailable"},
		// Refused for its role, not for the slots.
		{"a member's", viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: uuid.MustParse(two.ID), Role: viewer.RoleMember}),
			http.StatusForbidden, "forbidden"},
	} {
		rec := get(tc.ctx)
		var body struct{ Code string }
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != tc.status || body.Code != tc.code || (tc.status != http.StatusForbidden) != (rec.Header().Get("Retry-After") == "30") {
			t.Errorf("%s: %d %s (Retry-After %q); want %d %s", tc.name, rec.Code, rec.Body.Bytes(), rec.Header().Get("Retry-After"), tc.status, tc.code)
		}
	}
	close(release)
	if rec := <-first; rec.Code != http.StatusOK {
		t.Fatalf("the first download: %d %s", rec.Code, rec.Body.Bytes())
	}
	hold = false
	if rec := get(ctxOf(two)); rec.Code != http.StatusOK {
		t.Fatalf("after the first ended, another workspace's download: %d %s", rec.Code, rec.Body.Bytes())
	}
}
