package graph_test

// The order of /graphql's checks (docs/api.md "Errors in GraphQL"): the
// cheap ones first (method, content type), then authentication, and only
// then the body is read and checked. A request without a usable token never
// has its body read, so a large or malformed body costs nothing.

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/server"
)

// unreadBody records whether the handler read from it.
type unreadBody struct{ read bool }

func (b *unreadBody) Read(p []byte) (int, error) {
	b.read = true
	return 0, io.EOF
}

// TestBodyReadAfterAuthentication: without a valid token, a body that is
// not JSON, is over 1 MiB, or is not even read is answered 401
// unauthenticated (not 400 or 413): authentication comes before the body.
// The method and content type are still checked first.
func TestBodyReadAfterAuthentication(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Acme", "ACME")
		notJSON := bytes.Repeat([]byte("{"), middleware.MaxBodyBytes)
		tooLarge := bytes.Repeat([]byte(" "), 2*middleware.MaxBodyBytes)
		for _, tc := range []struct {
			name, authorization string
			body                []byte
		}{
			{"NoTokenBodyNotJSON", "", notJSON},
			{"NoTokenBodyTooLarge", "", tooLarge},
			{"MalformedTokenBodyNotJSON", "Bearer nope", notJSON},
			{"UnknownTokenBodyNotJSON", "Bearer pms_" + strings.Repeat("A", 43), notJSON},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := http.Header{}
				if tc.authorization != "" {
					h.Set("Authorization", tc.authorization)
				}
				r := rawGraphQL(t, s, http.MethodPost, "/graphql", h, "application/json", tc.body)
				wantError(t, r, "unauthenticated")
				if r.Status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401", r.Status)
				}
			})
		}
		t.Run("BodyNeverRead", func(t *testing.T) {
			h := newHandler(t, db)
			body := &unreadBody{}
			req := httptest.NewRequest(http.MethodPost, "/graphql", body)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized || body.read {
				t.Fatalf("status %d, body read %v", rec.Code, body.read)
			}
		})
		t.Run("CheapChecksFirst", func(t *testing.T) {
			if r := rawGraphQL(t, s, http.MethodPost, "/graphql", nil, "text/plain", notJSON); r.Status != http.StatusUnsupportedMediaType {
				t.Fatalf("status %d, want 415", r.Status)
			}
			if r := rawGraphQL(t, s, http.MethodPut, "/graphql", nil, "application/json", notJSON); r.Status != http.StatusMethodNotAllowed {
				t.Fatalf("status %d, want 405", r.Status)
			}
		})
		t.Run("WithTokenBodyChecked", func(t *testing.T) {
			r := rawGraphQL(t, s, http.MethodPost, "/graphql", bearer(w.MemberToken), "application/json", notJSON)
			wantError(t, r, "bad_request")
			r = rawGraphQL(t, s, http.MethodPost, "/graphql", bearer(w.MemberToken), "application/json", tooLarge)
			wantError(t, r, "payload_too_large")
		})
	})
}

// newHandler is procsvc's whole handler over db, to be called in process.
func newHandler(t testing.TB, db *database.DB) http.Handler {
	t.Helper()
	return server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client), Log: slog.New(slog.DiscardHandler)})
}

// BenchmarkUnauthenticatedLargeBody is the CPU a request without a token
// and with a 1 MiB body (one JSON object of that size) costs.
func BenchmarkUnauthenticatedLargeBody(b *testing.B) {
	db := dbtest.Open(b, "sqlite")
	h := newHandler(b, db)
	body := []byte(`{"query":"{ viewer { id } }","variables":{"pad":"` + strings.Repeat("x", middleware.MaxBodyBytes-64) + `"}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
