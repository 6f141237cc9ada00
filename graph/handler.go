package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/ratelimit"
	"github.com/procsvc/procsvc/internal/respcache"
	"github.com/procsvc/procsvc/internal/viewer"
)

// NewServer returns the GraphQL executor over r: POST and GET transports
// (and, with live, WebSocket and Server-Sent Events for subscriptions),
// automatic persisted queries, the limits of limits.go, which apply to
// subscription documents as to queries, and one error shape
// (extensions.code and extensions.requestId) for every failure. queries
// caches its parsed and validated documents.
func NewServer(r *Resolver, log *slog.Logger, m *metrics.Metrics, live *Live, queries graphql.Cache[*ast.QueryDocument]) *handler.Server {
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: r}))
	if live != nil {
		// Before POST, which would take a Server-Sent Events request too.
		writeErr := graphqlError(log)
		srv.AddTransport(webSocket{live: live, writeErr: writeErr})
		srv.AddTransport(sse{live: live, writeErr: writeErr})
	}
	srv.AddTransport(direct{transport.GET{}})
	srv.AddTransport(direct{transport.POST{}})
	srv.SetQueryCache(queries)
	srv.SetParserTokenLimit(MaxTokens)
	srv.Use(extension.Introspection{})
	// Before persisted queries: see documentLimits.
	srv.Use(documentLimits{validated: queries})
	srv.Use(extension.AutomaticPersistedQuery{Cache: perWorkspace{lru.New[string](1000)}})
	srv.Use(depthLimit{max: MaxDepth})
	srv.Use(pageSizeLimit{max: MaxPageSize})
	srv.Use(complexityLimit{max: MaxComplexity})
	// After the complexity limit, which computes the cost it charges.
	srv.Use(operationCost{})
	// After the rate limit: a request it refuses leaves its key alone.
	srv.Use(keyClaim{})
	// No field middleware (AroundFields): the plain fields of procedures,
	// comments and their edges are written without gqlgen's per-field
	// machinery (graph/internal/gqlgen), so such middleware would not see
	// them. Anything that must see every field belongs in a resolver.
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		oc := graphql.GetOperationContext(ctx)
		name := oc.OperationName
		if name == "" && oc.Operation != nil {
			name = oc.Operation.Name
		}
		route := "graphql:" + m.OperationLabel(name)
		if middleware.Info(ctx).Route != webSocketRoute {
			// A WebSocket's operations run concurrently on one request,
			// whose route is set once (webSocketRoute).
			middleware.Info(ctx).Route = route
		}
		if oc.Operation != nil && oc.Operation.Operation == ast.Query {
			respcache.MarkCacheable(ctx, route)
			if footprinted(oc.Operation) {
				respcache.MarkFootprinted(ctx)
			}
		}
		return next(ctx)
	})
	// A mutation's root fields run one after another: each starts with
	// fresh dataloaders, so that none renders an edge (a category, member,
	// project or comments) loaded before an earlier root field changed it.
	srv.AroundRootFields(func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
		if oc := graphql.GetOperationContext(ctx); oc.Operation != nil {
			switch {
			case oc.Operation.Operation == ast.Mutation:
				loader.Reset(ctx)
			case oc.Operation.Operation == ast.Query && !onStream(ctx):
				// Over HTTP the viewer was authenticated by this request,
				// with its workspace's version: its edges may come from
				// what other reads of that version loaded. A WebSocket's
				// or a stream's viewer is as old as its connection.
				loader.ReadOnly(ctx)
			}
		}
		return next(ctx)
	})
	present := func(ctx context.Context, err error) *gqlerror.Error {
		respcache.MarkUncacheable(ctx)
		gerr := presentError(ctx, log, err)
		if code, ok := gerr.Extensions["code"].(string); ok {
			m.GraphQLError(code)
		}
		return gerr
	}
	srv.SetErrorPresenter(present)
	// Every response within its bound in bytes (bound.go).
	srv.AroundResponses(boundResponses(r.ResponseBytes(), present))
	srv.AroundRootFields(boundMutationFields)
	if live != nil {
		live.present = present
	}
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in resolver", "request_id", middleware.RequestID(ctx), "panic", fmt.Sprint(p))
		return apperr.New(apperr.Internal, "internal error")
	})
	return srv
}

func init() {
	// Operations refused by procsvc's own limits are protocol errors like
	// gqlgen's validation failures: answered with a 4xx status, not 200,
	// and without data.
	errcode.RegisterErrorType(string(apperr.ValidationFailed), errcode.KindProtocol)
	// A refusal of the rate limit too: over a WebSocket it then ends the
	// operation with an error message (over HTTP the rate limiter's
	// middleware answers 429).
	errcode.RegisterErrorType(string(apperr.RateLimited), errcode.KindProtocol)
}

// perWorkspace keys a cache by the viewer's workspace as well, so that one
// tenant's persisted queries (whose text may hold its data as literals) can
// neither be run nor detected by another.
type perWorkspace struct{ graphql.Cache[string] }

func workspaceKey(ctx context.Context, key string) string {
	if v := viewer.FromContext(ctx); v != nil {
		return v.WorkspaceID.String() + "/" + key
	}
	return "-/" + key
}

func (c perWorkspace) Get(ctx context.Context, key string) (string, bool) {
	return c.Cache.Get(ctx, workspaceKey(ctx, key))
}

func (c perWorkspace) Add(ctx context.Context, key, value string) {
	c.Cache.Add(ctx, workspaceKey(ctx, key), value)
}

// gqlgenCodes maps gqlgen's own error codes to ours.
var gqlgenCodes = map[string]apperr.Code{
	errcode.ParseFailed:      apperr.BadRequest,
	errcode.ValidationFailed: apperr.ValidationFailed,
}

// presentError gives every GraphQL error docs/design.md §6's code and
// request id, building its body where REST builds its own
// (middleware.Body, which logs internal errors). Resolver errors carry an
// *apperr.Error; gqlgen's parse and validation errors are mapped by their
// code; persisted-query misses keep the code APQ clients look for; anything
// else is internal.
func presentError(ctx context.Context, log *slog.Logger, err error) *gqlerror.Error {
	gerr := graphql.DefaultErrorPresenter(ctx, err)
	var ae *apperr.Error
	var ge *gqlerror.Error
	if !errors.As(err, &ae) && errors.As(err, &ge) && ge.Err == nil {
		raw, _ := ge.Extensions["code"].(string)
		if raw == "PERSISTED_QUERY_NOT_FOUND" || raw == "PERSISTED_QUERY_NOT_SUPPORTED" {
			gerr.Extensions = map[string]any{"code": raw, "requestId": middleware.RequestID(ctx)}
			return gerr
		}
		code, known := gqlgenCodes[raw]
		switch {
		case known:
		case apperr.Known(apperr.Code(raw)) && apperr.Code(raw) != apperr.Internal:
			code = apperr.Code(raw)
		default:
			// Errors gqlgen raises while coercing arguments and variables.
			code = apperr.ValidationFailed
		}
		ae = &apperr.Error{Code: code, Message: ge.Message}
		if fields, ok := ge.Extensions["fields"].([]apperr.FieldError); ok {
			ae.Fields = fields
		}
		err = ae
	}
	body := middleware.Body(ctx, log, err)
	if len(body.Fields) == 0 && body.Code == apperr.ValidationFailed {
		if f := inputField(ctx, gerr.Path); f != "" {
			body.Fields = []apperr.FieldError{{Field: f, Message: body.Message}}
		}
	}
	gerr.Message = body.Message
	gerr.Extensions = extensions(body)
	return gerr
}

// inputField names the input field of a coercion error, which gqlgen reports
// with a path but no field: the last name of a variable's path
// (["variable", "in", "priority"]), or of an argument's path below the field
// being resolved (["createProcedure", "input", "dueAt"]).
func inputField(ctx context.Context, path ast.Path) string {
	below := 0
	if len(path) > 1 && path[0] == ast.PathName("variable") {
		below = 1
	} else if fc := graphql.GetFieldContext(ctx); fc != nil {
		below = len(fc.Path())
	} else {
		return ""
	}
	for i := len(path) - 1; i >= below; i-- {
		if name, ok := path[i].(ast.PathName); ok {
			return string(name)
		}
	}
	return ""
}

// ComplexityPerToken is how much complexity (complexity.go) one token of
// the rate limit buys: an operation costs ceil(complexity /
// ComplexityPerToken) tokens, at least 1, so that a page of 100 procedures'
// ids costs 2 and the most complex operation allowed (MaxComplexity) 20.
const ComplexityPerToken = 100

// OperationTokens is what an operation of complexity costs.
func OperationTokens(complexity int) int {
	return max(1, (complexity+ComplexityPerToken-1)/ComplexityPerToken)
}

// operationCost charges the request's rate limit (internal/ratelimit) by
// the operation's cost once it passed every limit, before anything
// executes. A refusal stops the request; the rate limiter's middleware
// answers it (429 rate_limited, with Retry-After).
type operationCost struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = operationCost{}

func (operationCost) ExtensionName() string                   { return "OperationCost" }
func (operationCost) Validate(graphql.ExecutableSchema) error { return nil }
func (operationCost) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	complexity := 0
	if s := extension.GetComplexityStats(graphql.WithOperationContext(ctx, oc)); s != nil {
		complexity = s.Complexity
	}
	if err := ratelimit.Spend(ctx, OperationTokens(complexity)); err != nil {
		return &gqlerror.Error{Message: apperr.From(err).Message, Err: err,
			Extensions: map[string]any{"code": string(apperr.RateLimited)}}
	}
	return nil
}
