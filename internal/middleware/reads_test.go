package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/consistency"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/viewer"
)

// store is a read pool whose server has replayed up to version.
type store struct {
	version int64
	pool    bool
	down    bool // ReadsAt cannot answer
	asked   int
}

type routedKey struct{}

func (s *store) HasReadPool() bool { return s.pool }

func (s *store) ReadsAt(ctx context.Context, _ uuid.UUID) (context.Context, int64, bool) {
	s.asked++
	if s.down {
		return ctx, 0, false
	}
	return context.WithValue(ctx, routedKey{}, true), s.version, true
}

func TestReadsRouting(t *testing.T) {
	tok := uuid.New()
	tests := []struct {
		name        string
		method      string
		readOnly    bool
		pool        bool
		standby     int64 // replayed version
		minHeader   string
		recent      int64 // the token's last write
		wantStandby bool
		wantStatus  int
	}{
		{"GetOnStandby", http.MethodGet, false, true, 10, "", 0, true, 200},
		{"QueryOnStandby", http.MethodPost, true, true, 10, "", 0, true, 200},
		{"MutationOnPrimary", http.MethodPost, false, true, 10, "", 0, false, 200},
		{"NoReadPool", http.MethodGet, false, false, 10, "", 0, false, 200},
		{"MinVersionReplayed", http.MethodGet, false, true, 10, "10", 0, true, 200},
		{"MinVersionAhead", http.MethodGet, false, true, 10, "11", 0, false, 200},
		{"RecentWriteAhead", http.MethodGet, false, true, 10, "", 12, false, 200},
		{"RecentWriteReplayed", http.MethodGet, false, true, 12, "", 12, true, 200},
		{"ErrMinVersionNotANumber", http.MethodGet, false, true, 10, "ten", 0, false, 400},
		{"ErrMinVersionNegative", http.MethodPost, false, true, 10, "-1", 0, false, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &store{version: tt.standby, pool: tt.pool}
			recent := consistency.NewRecent(time.Minute)
			recent.Wrote(tok, tt.recent)
			var onStandby bool
			var sawVersion int64
			h := middleware.NewReads(st, recent).Middleware(func(w http.ResponseWriter, _ *http.Request, err error) {
				if apperr.CodeOf(err) == apperr.BadRequest {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				w.WriteHeader(http.StatusInternalServerError)
			})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				onStandby, _ = r.Context().Value(routedKey{}).(bool)
				sawVersion = viewer.FromContext(r.Context()).WorkspaceVersion
			}))
			req := httptest.NewRequest(tt.method, "/x", nil)
			ctx := viewer.NewContext(req.Context(), &viewer.Viewer{TokenID: tok, WorkspaceID: uuid.New(), WorkspaceVersion: 20, VersionKnown: true})
			if tt.readOnly {
				ctx = consistency.RouteToStandby(ctx)
			}
			if tt.minHeader != "" {
				req.Header.Set(middleware.MinVersionHeader, tt.minHeader)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req.WithContext(ctx))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d; want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantStatus != 200 {
				return
			}
			if onStandby != tt.wantStandby {
				t.Fatalf("on the standby: %v; want %v", onStandby, tt.wantStandby)
			}
			want := int64(20)
			if tt.wantStandby {
				want = tt.standby // keyed by the version the standby has
			}
			if sawVersion != want {
				t.Fatalf("the viewer's version is %d; want %d", sawVersion, want)
			}
		})
	}
}

func TestReadsCountWhereTheyWent(t *testing.T) {
	tok := uuid.New()
	tests := []struct {
		name   string
		method string
		store  store
		recent int64 // the token's last write
		want   middleware.Routed
	}{
		{"Standby", http.MethodGet, store{version: 10, pool: true}, 0, middleware.Routed{Standby: 1}},
		{"StandbyBehind", http.MethodGet, store{version: 10, pool: true}, 11, middleware.Routed{Behind: 1}},
		{"ReadPoolDown", http.MethodGet, store{pool: true, down: true}, 0, middleware.Routed{Unanswered: 1}},
		{"NoReadPool", http.MethodGet, store{version: 10}, 0, middleware.Routed{}},
		{"Write", http.MethodPost, store{version: 10, pool: true}, 0, middleware.Routed{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recent := consistency.NewRecent(time.Minute)
			recent.Wrote(tok, tt.recent)
			rd := middleware.NewReads(&tt.store, recent)
			h := rd.Middleware(nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			req := httptest.NewRequest(tt.method, "/x", nil)
			req = req.WithContext(viewer.NewContext(req.Context(), &viewer.Viewer{TokenID: tok, WorkspaceID: uuid.New()}))
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got := rd.Routed(); got != tt.want {
				t.Fatalf("Routed() = %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestWritesReportTheirVersion(t *testing.T) {
	tok := uuid.New()
	recent := consistency.NewRecent(time.Minute)
	h := middleware.NewReads(&store{pool: true}, recent).Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		consistency.Wrote(r.Context(), 41)
		consistency.Wrote(r.Context(), 42)
		consistency.Wrote(r.Context(), 40)
		if got := consistency.Committed(r.Context()); got != 42 {
			t.Errorf("Committed = %d; want 42", got)
		}
		_, _ = w.Write([]byte("{}"))
	}))
	req := httptest.NewRequest(http.MethodPost, "/x", nil)
	req = req.WithContext(viewer.NewContext(req.Context(), &viewer.Viewer{TokenID: tok, WorkspaceID: uuid.New()}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get(middleware.VersionHeader); got != strconv.Itoa(42) {
		t.Fatalf("%s = %q; want 42", middleware.VersionHeader, got)
	}
	if got := recent.Min(tok); got != 42 {
		t.Fatalf("remembered %d for the token; want 42", got)
	}

	// A request that wrote nothing says nothing.
	rec = httptest.NewRecorder()
	middleware.NewReads(&store{}, recent).Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if got := rec.Header().Get(middleware.VersionHeader); got != "" {
		t.Fatalf("%s = %q on a read; want none", middleware.VersionHeader, got)
	}
}
