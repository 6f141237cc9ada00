// Package middleware holds the HTTP plumbing shared by both faces: request
// ids, panic recovery, access logs, body limits and authentication, plus the
// one home of docs/design.md §6's error bodies and of the code → HTTP status
// table (errors.go).
package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// MaxBodyBytes is the largest request body accepted (1 MiB).
const MaxBodyBytes = 1 << 20

// RequestIDHeader carries the request id both ways.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns the request id of ctx ("" outside a request).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ContextWithRequestID returns ctx carrying id as its request id: work that
// outlives the request it started from (a subscription's shared rendering)
// logs and reports errors under that request's id.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// WithRequestID keeps a valid incoming X-Request-Id (a UUID) or makes one,
// and echoes it on the response.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if u, err := ids.Parse(id); err != nil {
			id = uuid.Must(uuid.NewV7()).String()
		} else {
			id = u.String()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// SecurityHeaders gives every response X-Content-Type-Options: nosniff and,
// unless the handler sets its own (the playground's hashed assets),
// Cache-Control: no-store: API answers are per token and must not be kept
// by browsers or shared caches. It wraps the whole handler, so errors,
// panics turned into errors and cached replays carry them too.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status written, for logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush lets streaming responses through the recorder, whatever wrappers
// (with Unwrap) lie between it and the connection.
func (s *statusRecorder) Flush() {
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// RequestInfo is what the access log and metrics learn about a request as it
// runs: the route it matched and the workspace it acted in.
type RequestInfo struct {
	Route       string
	WorkspaceID string
}

type infoKey struct{}

// Info returns the request's RequestInfo, or a throwaway one outside Observe.
func Info(ctx context.Context) *RequestInfo {
	if i, ok := ctx.Value(infoKey{}).(*RequestInfo); ok {
		return i
	}
	return &RequestInfo{}
}

// Observer records a finished request (metrics.Metrics implements it).
type Observer interface {
	ObserveRequest(route, method string, status int, d time.Duration)
}

// Observe writes one access-log line per request, records its metrics, and
// turns a panic into an internal error answered with docs/design.md §6's
// body (the stack goes to the log only). No header, body or token is ever
// logged.
func Observe(log *slog.Logger, obs Observer) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			info := &RequestInfo{}
			r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					log.ErrorContext(r.Context(), "panic", "request_id", RequestID(r.Context()), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					if !rec.wrote {
						WriteError(rec, r, log, apperr.New(apperr.Internal, "internal error"))
					} else {
						rec.status = http.StatusInternalServerError
					}
				}
				route := info.Route
				if route == "" {
					// ServeMux records the matched pattern on the request it
					// was given: this one.
					route = routeOf(r.Pattern)
				}
				d := time.Since(start)
				if obs != nil {
					obs.ObserveRequest(route, r.Method, rec.status, d)
				}
				// LogAttrs writes what InfoContext with these pairs writes,
				// without boxing each value.
				log.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("request_id", RequestID(r.Context())),
					slog.String("method", r.Method),
					slog.String("route", route),
					slog.String("path", r.URL.Path),
					slog.Int("status", rec.status),
					slog.Float64("duration_ms", float64(d.Microseconds())/1000),
					slog.String("workspace_id", info.WorkspaceID),
				)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// routeOf turns a ServeMux pattern ("GET /procedures/{id}") into a route
// label ("/procedures/{id}"); requests no route matched share one label.
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "" || pattern == "/" {
		return "unmatched"
	}
	return pattern
}

// Authenticate resolves the bearer token, puts the viewer in the context, and
// answers failures through writeErr (a refusal by the client address's
// failure limit with its Retry-After).
func Authenticate(a *auth.Authenticator, writeErr ErrorWriter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The workspace a person of several picks (with an identity
			// provider's token; a pms_ token names its own).
			ctx := auth.WithWorkspaceChoice(r.Context(), r.Header.Get(auth.WorkspaceHeader))
			v, err := a.Authenticate(ctx, r.Header.Get("Authorization"))
			if err != nil {
				if seconds, ok := auth.RetryAfter(err); ok {
					w.Header().Set("Retry-After", strconv.FormatInt(seconds, 10))
				}
				writeErr(w, r, err)
				return
			}
			Info(r.Context()).WorkspaceID = v.WorkspaceID.String()
			// ctx keeps the workspace choice: a subscription's re-checks
			// of its credential are made with it.
			next.ServeHTTP(w, r.WithContext(viewer.NewContext(ctx, v)))
		})
	}
}
