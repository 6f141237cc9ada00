package gqlhttp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/consistency"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/metrics"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/respcache"
)

// NewExecutor returns the GraphQL executor over r: POST and GET transports
// (and, with lv, WebSocket and Server-Sent Events for subscriptions),
// automatic persisted queries, the limits of limits.go, which apply to
// subscription documents as to queries, and one error shape
// (extensions.code and extensions.requestId) for every failure. docs
// keeps its parsed and validated documents and its persisted queries.
func NewExecutor(r *graph.Resolver, log *slog.Logger, m *metrics.Metrics, lv *live.Live, docs *Documents) *handler.Server {
	registerErrorCodes.Do(registerProtocolErrors)
	// The published schema: documents are validated against it and
	// introspection shows it (published.go).
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: r, Schema: PublishedSchema()}))
	if lv != nil {
		// Before POST, which would take a Server-Sent Events request too.
		for _, t := range lv.Transports(graphqlError(log)) {
			srv.AddTransport(variablesChecked{t})
		}
	}
	// Each transport answers refused variables in REST's words
	// (input_variables.go).
	srv.AddTransport(variablesChecked{direct{decoded{}}})
	srv.SetQueryCache(docs.Parsed())
	srv.SetParserTokenLimit(MaxTokens)
	srv.SetValidationRulesFn(validationRules)
	srv.Use(extension.Introspection{})
	// Before persisted queries: see documentLimits.
	srv.Use(documentLimits{validated: docs.Parsed()})
	srv.Use(extension.AutomaticPersistedQuery{Cache: docs.Persisted()})
	srv.Use(depthLimit{max: MaxDepth})
	srv.Use(introspectionBudget{schema: PublishedSchema()})
	// Before the page-size limit, which reads arguments' values.
	srv.Use(inputVariables{})
	srv.Use(pageSizeLimit{max: MaxPageSize})
	srv.Use(complexityLimit{max: MaxComplexity})
	// After the complexity limit, which computes the cost it charges.
	srv.Use(operationCost{})
	// After the rate limit: a request it refuses leaves its key alone.
	srv.Use(keyClaim{})
	// No field middleware (AroundFields): the plain fields of procedures,
	// comments and their edges, the edges their lists primed (a
	// procedure's category, doer and project, a comment's author), lists
	// of plain objects and a procedure's comments and history are
	// resolved and written without gqlgen's per-field machinery
	// (graph/internal/gqlgen), so such middleware would not see them.
	// Anything that must see every field belongs in a resolver.
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		oc := graphql.GetOperationContext(ctx)
		name := oc.OperationName
		if name == "" && oc.Operation != nil {
			name = oc.Operation.Name
		}
		route := "graphql:" + m.OperationLabel(name)
		if middleware.Info(ctx).Route != live.WebSocketRoute {
			// A WebSocket's operations run concurrently on one request,
			// whose route is set once (live.WebSocketRoute).
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
			case oc.Operation.Operation == ast.Query && !live.OnStream(ctx):
				// Over HTTP the viewer was authenticated by this request,
				// with its workspace's version: its edges may come from
				// what other reads of that version loaded. A WebSocket's
				// or a stream's viewer is as old as its connection.
				loader.SharedMode(ctx)
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
	// Every response within its bound in bytes (bound_responses.go).
	srv.AroundResponses(boundResponses(r.ResponseBytes(), present))
	// A response to writes says the workspace version they committed, for
	// read-your-writes on standbys (docs/api.md, "Reading your writes").
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		resp := next(ctx)
		if resp == nil {
			return nil
		}
		if v := consistency.Committed(ctx); v > 0 {
			if resp.Extensions == nil {
				resp.Extensions = map[string]any{}
			}
			resp.Extensions["workspaceVersion"] = v
		}
		return resp
	})
	srv.AroundRootFields(boundMutationFields)
	if lv != nil {
		lv.SetErrorPresenter(present)
	}
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in resolver", "request_id", middleware.RequestID(ctx), "panic", fmt.Sprint(p))
		return apperr.New(apperr.Internal, "internal error")
	})
	return srv
}

// registerErrorCodes registers procsvc's protocol error codes in gqlgen's
// table, which is global to the process: once, by the first executor made.
var registerErrorCodes sync.Once

func registerProtocolErrors() {
	// Operations refused by procsvc's own limits are protocol errors like
	// gqlgen's validation failures: answered with a 4xx status, not 200,
	// and without data.
	errcode.RegisterErrorType(string(apperr.ValidationFailed), errcode.KindProtocol)
	// A refusal of the rate limit too: over a WebSocket it then ends the
	// operation with an error message (over HTTP the rate limiter's
	// middleware answers 429).
	errcode.RegisterErrorType(string(apperr.RateLimited), errcode.KindProtocol)
}
