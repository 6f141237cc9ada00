package ratelimit_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/viewer"
)

// writeErr answers errors as {"code": ...} with 429 for rate_limited.
func writeErr(w http.ResponseWriter, _ *http.Request, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": string(apperr.CodeOf(err))})
}

// serve runs h for a request of token v and returns the recorded response.
func serve(h http.Handler, v *viewer.Viewer) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	if v != nil {
		r = r.WithContext(viewer.NewContext(r.Context(), v))
	}
	w := httptest.NewRecorder()
	w.Header().Set("X-Request-Id", "kept")
	h.ServeHTTP(w, r)
	return w
}

func TestPerRequestChargesOneBeforeTheHandler(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 2}}, ratelimit.WithClock(clk.Now))
	ran := 0
	h := l.PerRequest(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran++
		w.WriteHeader(http.StatusOK)
	}))
	v := &viewer.Viewer{TokenID: uuid.New(), WorkspaceID: uuid.New()}
	for i, want := range []string{"1", "0"} {
		w := serve(h, v)
		if w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderRemaining) != want || w.Header().Get(ratelimit.HeaderLimit) != "2" {
			t.Fatalf("request %d: %d %v", i+1, w.Code, w.Header())
		}
	}
	w := serve(h, v)
	if w.Code != http.StatusTooManyRequests || ran != 2 {
		t.Fatalf("third request: status %d, handler ran %d times; want 429 without running", w.Code, ran)
	}
	if w.Header().Get("Retry-After") != "1" || w.Header().Get(ratelimit.HeaderReset) != "2" || w.Header().Get(ratelimit.HeaderRemaining) != "0" {
		t.Fatalf("refusal headers: %v", w.Header())
	}
	// Without a viewer (not authenticated) nothing is charged or set.
	if w := serve(h, nil); w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderLimit) != "" {
		t.Fatalf("no viewer: %d %v", w.Code, w.Header())
	}
}

// TestHeadersReportBothNumbers: RateLimit-Limit is the bucket's size and
// RateLimit-Policy adds the seconds an empty bucket takes to refill
// (size / rate, rounded up, at least 1), so that a client learns the burst
// and the rate; a refusal carries them too.
func TestHeadersReportBothNumbers(t *testing.T) {
	for _, tc := range []struct {
		limit         ratelimit.Limit
		limitHeader   string
		policyHeader  string
		resetAfterOne string
	}{
		{ratelimit.Limit{Rate: 50, Burst: 200}, "200", "200;w=4", "1"}, // the defaults
		{ratelimit.Limit{Rate: 1, Burst: 2}, "2", "2;w=2", "1"},
		{ratelimit.Limit{Rate: 3, Burst: 10}, "10", "10;w=4", "1"}, // 3.33 s, rounded up
		{ratelimit.Limit{Rate: 0.5, Burst: 2}, "2", "2;w=4", "2"},  // slower than one a second
		{ratelimit.Limit{Rate: 1000, Burst: 1}, "1", "1;w=1", "1"}, // a millisecond: at least 1
	} {
		clk := newClock()
		l := newLimiter(t, ratelimit.Config{Limit: tc.limit}, ratelimit.WithClock(clk.Now))
		h := l.PerRequest(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		v := &viewer.Viewer{TokenID: uuid.New(), WorkspaceID: uuid.New()}
		first := serve(h, v)
		for range tc.limit.Burst {
			serve(h, v)
		}
		refused := serve(h, v)
		if refused.Code != http.StatusTooManyRequests {
			t.Fatalf("%+v: request %d answered %d, want 429", tc.limit, tc.limit.Burst+2, refused.Code)
		}
		for name, w := range map[string]*httptest.ResponseRecorder{"first": first, "refused": refused} {
			got := [2]string{w.Header().Get(ratelimit.HeaderLimit), w.Header().Get(ratelimit.HeaderPolicy)}
			if want := [2]string{tc.limitHeader, tc.policyHeader}; got != want {
				t.Errorf("%+v, %s answer: RateLimit-Limit, RateLimit-Policy = %q, want %q", tc.limit, name, got, want)
			}
		}
		if got := first.Header().Get(ratelimit.HeaderReset); got != tc.resetAfterOne {
			t.Errorf("%+v: RateLimit-Reset after one request = %s, want %s", tc.limit, got, tc.resetAfterOne)
		}
	}
}

func TestPerOperationChargesWhatTheHandlerSpends(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 10}}, ratelimit.WithClock(clk.Now))
	v := &viewer.Viewer{TokenID: uuid.New(), WorkspaceID: uuid.New()}
	spend := func(n int) http.Handler {
		return l.PerOperation(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := ratelimit.Spend(r.Context(), n); err != nil {
				// What gqlgen does with a refused operation: answer
				// it in its own shape. The middleware replaces it.
				w.Header().Set("X-Handler", "yes")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = w.Write([]byte(`{"errors":[{"message":"refused"}],"data":null}`))
				return
			}
			// A second Spend is the first one's answer.
			if err := ratelimit.Spend(r.Context(), 100); err != nil {
				t.Errorf("second Spend: %v", err)
			}
			w.Header().Set("X-Handler", "yes")
			_, _ = w.Write([]byte(`{"data":{}}`))
		}))
	}
	if w := serve(spend(4), v); w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderRemaining) != "6" {
		t.Fatalf("spend 4: %d %v", w.Code, w.Header())
	}
	if w := serve(spend(6), v); w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderRemaining) != "0" {
		t.Fatalf("spend 6: %d %v", w.Code, w.Header())
	}
	w := serve(spend(3), v)
	if w.Code != http.StatusTooManyRequests || w.Body.String() != "{\"code\":\"rate_limited\"}\n" {
		t.Fatalf("spend 3 of 0: %d %s", w.Code, w.Body)
	}
	if w.Header().Get("Retry-After") != "3" || w.Header().Get("X-Handler") != "" || w.Header().Get("X-Request-Id") != "kept" {
		t.Fatalf("refusal headers: %v (want Retry-After 3, the handler's dropped, the request id kept)", w.Header())
	}
}

func TestPerOperationChargesOneWithoutSpend(t *testing.T) {
	clk := newClock()
	l := newLimiter(t, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Burst: 2}}, ratelimit.WithClock(clk.Now))
	v := &viewer.Viewer{TokenID: uuid.New(), WorkspaceID: uuid.New()}
	h := l.PerOperation(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cache", "hit")
		w.WriteHeader(http.StatusOK)
	}))
	silent := l.PerOperation(writeErr)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	if w := serve(h, v); w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderRemaining) != "1" {
		t.Fatalf("first: %d %v", w.Code, w.Header())
	}
	if w := serve(silent, v); w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderRemaining) != "0" {
		t.Fatalf("a handler that writes nothing: %d %v", w.Code, w.Header())
	}
	w := serve(h, v)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("X-Cache") != "" || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("third: %d %v, want 429 without the handler's headers", w.Code, w.Header())
	}
}

func TestSpendOutsideTheMiddlewareIsFree(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if err := ratelimit.Spend(r.Context(), 1000); err != nil {
		t.Fatal(err)
	}
	var l *ratelimit.Limiter
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	v := &viewer.Viewer{TokenID: uuid.New(), WorkspaceID: uuid.New()}
	for _, h := range []http.Handler{l.PerRequest(writeErr)(next), l.PerOperation(writeErr)(next)} {
		if w := serve(h, v); w.Code != http.StatusOK || w.Header().Get(ratelimit.HeaderLimit) != "" {
			t.Fatalf("nil limiter: %d %v", w.Code, w.Header())
		}
	}
}

func TestRefusalIsRateLimited(t *testing.T) {
	err := ratelimit.Decision{RetryAfter: 1500e6}.Err()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.RateLimited {
		t.Fatalf("%v: want rate_limited", err)
	}
}
