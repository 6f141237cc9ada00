package live

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/viewer"
)

// TestCloseReasonsAreValidUTF8WithinTheirBound: whatever a close reason
// quotes, it goes out valid UTF-8 within 123 bytes, cut on a rune boundary
// (after an odd byte, two-byte runes put the cut inside one).
func TestCloseReasonsAreValidUTF8WithinTheirBound(t *testing.T) {
	for _, reason := range []string{
		"x" + strings.Repeat("é", 100),
		strings.Repeat("€", 60),
		"Subscriber for " + strings.Repeat("😀", 40) + " already exists",
		"bad bytes \xff\xfe " + strings.Repeat("é", 80),
		"short",
	} {
		got := closeReason(reason)
		if !utf8.ValidString(got) || len(got) > maxCloseReason {
			t.Errorf("closeReason(%q) = %q (%d bytes): want valid UTF-8 of at most %d bytes", reason, got, len(got), maxCloseReason)
		}
		if utf8.ValidString(reason) && (!strings.HasPrefix(reason, got) || len(got) < min(len(reason), maxCloseReason-3)) {
			t.Errorf("closeReason(%q) = %q: want the longest prefix within the bound", reason, got)
		}
	}

	t.Run("an unknown message type, quoted", func(t *testing.T) {
		l := New(Options{
			Authenticate: func(context.Context, string) (*viewer.Viewer, error) {
				return &viewer.Viewer{WorkspaceID: uuid.New(), TokenID: uuid.New(), Role: viewer.RoleViewer}, nil
			},
			Loaders: func(ctx context.Context) context.Context { return ctx },
		})
		ws := webSocket{transport{live: l, writeErr: func(w http.ResponseWriter, _ *http.Request, err error) { http.Error(w, err.Error(), 500) }}}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ws.Do(w, r, panicExec{}) }))
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c := dialTransportWS(t, srv)
		typ := "x" + strings.Repeat("é", 100) // the cut at 40 bytes falls inside an é
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"`+typ+`"}`)); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.Read(ctx)
		var closed websocket.CloseError
		if !errors.As(err, &closed) || closed.Code != CloseBadMessage {
			t.Fatalf("read: %v, want a close with %d", err, CloseBadMessage)
		}
		want := `Invalid message type "x` + strings.Repeat("é", 19) + `…"`
		if closed.Reason != want || !utf8.ValidString(closed.Reason) || len(closed.Reason) > maxCloseReason {
			t.Fatalf("close reason %q, want %q", closed.Reason, want)
		}
	})
}
