package respcache

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/viewer"
)

// A write recorded before its commit (Writes.Pending) is waited for, never
// used: a request that observed its version is served the stored response
// once the writer reports the commit (the write leaves the response
// alone), and computes it afresh when the commit failed, when another
// replica's notification of the same version replaced it, or when the
// writer never reports (after pendingWait, not forever).
func TestPendingWritesAreWaitedForNeverUsed(t *testing.T) {
	ws, member := uuid.New(), uuid.New()
	facets := func(p procedure.Priority) *core.Facets {
		return &core.Facets{ProjectID: uuid.New(), State: procedure.StateTODO, Priority: p}
	}
	// untouching changes a procedure the response does not show (its
	// footprint holds nothing); touching is a change of access, which
	// touches every response.
	untouching := core.Change{WorkspaceID: ws, Kind: core.ProcedureUpdated, ProcedureID: uuid.New(),
		Before: facets(procedure.PriorityLOW), After: facets(procedure.PriorityHIGH)}
	touching := core.Change{WorkspaceID: ws, Kind: core.AccessChanged}

	var computed atomic.Int64
	c := New(1<<20, 0)
	h := c.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		computed.Add(1)
		MarkCacheable(r.Context(), "test")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`"computed"`))
	}))
	request := func(version int64) *http.Request {
		v := &viewer.Viewer{WorkspaceID: ws, MemberID: member, Role: viewer.RoleMember, WorkspaceVersion: version, VersionKnown: true}
		return httptest.NewRequest(http.MethodGet, "/procedures?limit=50", nil).WithContext(viewer.NewContext(context.Background(), v))
	}
	// stored puts a response computed at version in the cache, with an
	// (empty) footprint: a response later writes may leave current.
	stored := func(version int64) {
		r := request(version)
		c.store(ws, cacheKey(viewer.FromContext(r.Context()), r, nil), &entry{workspace: ws, contentType: "application/json",
			body: []byte(`"stored"`), version: version, footprint: core.NewFootprint()})
	}
	// serve sends a request of version; once it waits for a commit's
	// answer, then runs (the writer reporting) and the answer is returned.
	serve := func(version int64, then func()) (body, how string) {
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, request(version))
		}()
		if then != nil {
			for c.awaiting.Load() == 0 {
				select {
				case <-done:
					t.Fatalf("version %d: answered %q without waiting for the pending write", version, rec.Body.String())
				case <-time.After(time.Millisecond):
				}
			}
			then()
		}
		<-done
		return rec.Body.String(), rec.Header().Get("X-Cache")
	}

	cases := []struct {
		name    string
		pending core.Change
		report  func(resolve func(bool), version int64)
		want    string // the body served: "stored" or "computed"
	}{
		{"committed", untouching, func(resolve func(bool), _ int64) { resolve(true) }, `"stored"`},
		{"failed", untouching, func(resolve func(bool), _ int64) { resolve(false) }, `"computed"`},
		{"failed, then another replica committed a touching change", untouching, func(resolve func(bool), version int64) {
			resolve(false)
			c.recent.Observe(touching, version)
		}, `"computed"`},
		{"replaced by another replica's touching change before the report", untouching, func(resolve func(bool), version int64) {
			c.recent.Observe(touching, version)
			resolve(true) // this replica's report comes late: the notification stands
		}, `"computed"`},
		{"committed but touching", touching, func(resolve func(bool), _ int64) { resolve(true) }, `"computed"`},
	}
	version := int64(10)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			version += 2
			stored(version - 1)
			resolve := c.recent.Pending(tc.pending, version)
			before := computed.Load()
			body, how := serve(version, func() { tc.report(resolve, version) })
			if body != tc.want {
				t.Fatalf("served %s (X-Cache %q), want %s", body, how, tc.want)
			}
			if wantComputed := tc.want == `"computed"`; (computed.Load() > before) != wantComputed {
				t.Fatalf("computed %d times, want %v", computed.Load()-before, wantComputed)
			}
			// The loaders' shared records never wait: a pending change
			// says no to them, a committed procedure write yes.
			if tc.name == "committed" && !c.recent.OnlyProcedureWrites(ws, version-1, version) {
				t.Fatal("after the report, the committed procedure write is not known to the shared records")
			}
		})
	}

	t.Run("never reported", func(t *testing.T) {
		version += 2
		stored(version - 1)
		resolve := c.recent.Pending(untouching, version)
		if c.recent.OnlyProcedureWrites(ws, version-1, version) {
			t.Fatal("a pending write was taken as known by the shared records")
		}
		before := computed.Load()
		// No report: the request gives up after pendingWait and computes.
		if body, _ := serve(version, nil); body != `"computed"` || computed.Load() != before+1 {
			t.Fatalf("served %s, computed %d times; want computed once", body, computed.Load()-before)
		}
		resolve(true)
		resolve(false) // a second report changes nothing
		if !c.recent.OnlyProcedureWrites(ws, version-1, version) {
			t.Fatal("the committed write was forgotten by a second report")
		}
	})
}
