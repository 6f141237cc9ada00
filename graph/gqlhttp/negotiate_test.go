package gqlhttp

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
)

// TestNegotiate pins content negotiation (RFC 9110 §12.5.1) of /graphql's
// answers: q-values, order as the tie-break, q=0 as not acceptable,
// wildcards, the most specific range winning, parameters, and malformed
// ranges ignored.
func TestNegotiate(t *testing.T) {
	const (
		json   = mediaJSON
		gqlRes = mediaGraphQLResponse
		events = mediaEventStream
	)
	for _, c := range []struct {
		accept      []string
		media       string
		eventStream bool
	}{
		{nil, json, false},
		{[]string{""}, json, false},
		{[]string{"application/json"}, json, false},
		{[]string{"application/graphql-response+json"}, gqlRes, false},
		{[]string{"text/event-stream"}, events, true},
		// Order breaks ties in q.
		{[]string{"application/json, text/event-stream"}, json, true},
		{[]string{"text/event-stream, application/json"}, events, true},
		{[]string{"application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed"}, gqlRes, true},
		{[]string{"application/json, application/graphql-response+json"}, json, false},
		// q-values.
		{[]string{"application/json;q=0.5, text/event-stream"}, events, true},
		{[]string{"application/json, text/event-stream;q=0.9"}, json, true},
		{[]string{"text/event-stream;q=0.4, application/json;q=0.5"}, json, true},
		{[]string{"text/event-stream;q=0.501, application/json;q=0.5"}, events, true},
		{[]string{"application/json; q=1.0, text/event-stream; q=1"}, json, true},
		{[]string{"application/graphql-response+json;q=0, application/json"}, json, false},
		// q=0: not acceptable, even when nothing else is.
		{[]string{"application/json, text/event-stream;q=0"}, json, false},
		{[]string{"text/event-stream;q=0"}, json, false},
		{[]string{"application/json;q=0, text/event-stream;q=0.001"}, events, true},
		{[]string{"application/json;q=0, application/graphql-response+json;q=0, text/event-stream;q=0"}, json, false},
		// Wildcards, and the most specific range deciding.
		{[]string{"*/*"}, json, true},
		{[]string{"*"}, json, true},
		{[]string{"*; q=.2"}, json, true},
		{[]string{"application/*"}, json, false},
		{[]string{"text/*"}, events, true},
		{[]string{"text/*, application/*;q=0.5"}, events, true},
		{[]string{"text/event-stream;q=0, */*"}, json, false},
		{[]string{"*/*;q=0.1, text/event-stream"}, events, true},
		{[]string{"*/*, application/json;q=0"}, gqlRes, true},
		{[]string{"text/*;q=0, text/event-stream"}, events, true},
		// Parameters make a range more specific; they do not stop a match.
		{[]string{"application/json; charset=utf-8, text/event-stream"}, json, true},
		{[]string{"text/event-stream;charset=utf-8;q=0.9, application/json;q=0.8"}, events, true},
		{[]string{"text/*;q=0.1, text/event-stream;charset=utf-8"}, events, true},
		{[]string{`application/json;profile="a,b";q=0.2, text/event-stream;q=0.3`}, events, true},
		// Several header lines read as one list, in order.
		{[]string{"text/event-stream", "application/json"}, events, true},
		{[]string{"application/json", "text/event-stream"}, json, true},
		// Case does not matter.
		{[]string{"Text/Event-Stream"}, events, true},
		// Malformed ranges and q-values are ignored.
		{[]string{"application/json;q=abc, text/event-stream"}, events, true},
		{[]string{"application/json;q=2, text/event-stream;q=0.1"}, events, true},
		{[]string{"application/json;q=-1, text/event-stream;q=0.1"}, events, true},
		{[]string{"nonsense, text/event-stream"}, events, true},
		{[]string{"*/json, text/event-stream"}, events, true},
		{[]string{"image/png"}, json, false},
		{[]string{",,, ;;"}, json, false},
	} {
		h := http.Header{}
		for _, v := range c.accept {
			h.Add("Accept", v)
		}
		if got := negotiate(h); got.media != c.media || got.eventStream != c.eventStream {
			t.Errorf("Accept %q: %s (event stream acceptable %v), want %s (%v)", c.accept, got.media, got.eventStream, c.media, c.eventStream)
		}
	}
}

// TestGuardStreamsOnlySubscriptions: the guard sends a subscription whose
// client accepts text/event-stream to the stream chain, marked for the SSE
// transport and without the request deadline; a query or mutation, or a
// subscription without an acceptable event stream, goes to the request
// chain with its deadline, answered as JSON or framed as one event.
func TestGuardStreamsOnlySubscriptions(t *testing.T) {
	type seen struct {
		chain    string
		deadline bool
		stream   bool
	}
	var got seen
	lv := live.New(live.Options{})
	// The Server-Sent Events transport takes what the guard marked for a
	// stream.
	sse := lv.Transports(nil)[1]
	chain := func(name string) func(middleware.ErrorWriter) func(http.Handler) http.Handler {
		return func(middleware.ErrorWriter) func(http.Handler) http.Handler {
			return func(http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, deadline := r.Context().Deadline()
					got = seen{chain: name, deadline: deadline, stream: sse.Supports(r)}
					w.Header().Set("Content-Type", r.Header.Get("Accept"))
					_, _ = w.Write([]byte(`{"data":{}}`))
				})
			}
		}
	}
	pass := func(middleware.ErrorWriter) func(http.Handler) http.Handler {
		return func(h http.Handler) http.Handler { return h }
	}
	h := NewHandler(&graph.Resolver{}, slog.New(slog.DiscardHandler), metrics.New(nil),
		Middleware{Authenticate: pass, Requests: chain("requests"), Streams: chain("streams")}, lv, NewDocuments(0, 0))
	const subscription, query = `{"query":"subscription { procedureEvents { kind } }"}`, `{"query":"{ viewer { id } }"}`
	for _, c := range []struct {
		body, accept string
		want         seen
		answer       string
	}{
		{subscription, "text/event-stream", seen{"streams", false, true}, `{"data":{}}`},
		{subscription, "application/json, text/event-stream;q=0.5", seen{"streams", false, true}, `{"data":{}}`},
		{subscription, "application/json", seen{"requests", true, false}, `{"data":{}}`},
		{subscription, "application/json, text/event-stream;q=0", seen{"requests", true, false}, `{"data":{}}`},
		{query, "text/event-stream", seen{"requests", true, false}, "event: next\ndata: {\"data\":{}}\n\nevent: complete\ndata:\n\n"},
		{query, "application/json, text/event-stream", seen{"requests", true, false}, `{"data":{}}`},
		{`{"query":"mutation { a }"}`, "text/event-stream", seen{"requests", true, false}, "event: next\ndata: {\"data\":{}}\n\nevent: complete\ndata:\n\n"},
		{`{"query":"query Q { a } subscription S { b }","operationName":"Q"}`, "text/event-stream", seen{"requests", true, false}, "event: next\ndata: {\"data\":{}}\n\nevent: complete\ndata:\n\n"},
		{`{"query":"query Q { a } subscription S { b }","operationName":"S"}`, "text/event-stream", seen{"streams", false, true}, `{"data":{}}`},
	} {
		got = seen{}
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", c.accept)
		ctx, cancel := middleware.WithDeadline(req.Context(), time.Minute)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		cancel()
		if got != c.want || rec.Body.String() != c.answer {
			t.Errorf("%s with Accept %q: %+v answering %q, want %+v answering %q", c.body, c.accept, got, rec.Body, c.want, c.answer)
		}
	}
}
