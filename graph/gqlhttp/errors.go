package gqlhttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

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
// with a path but no field (one input_values.go's checks did not refuse
// first, before anything ran): the last name of a variable's path
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

// extensions are a GraphQL error's extensions for body: the code, request id,
// fields and reason of docs/design.md §6's body.
func extensions(body middleware.ErrorBody) map[string]any {
	ext := map[string]any{"code": string(body.Code), "requestId": body.RequestID}
	if len(body.Fields) > 0 {
		ext["fields"] = body.Fields
	}
	if body.Reason != "" {
		ext["reason"] = string(body.Reason)
	}
	return ext
}

// graphqlError answers err in GraphQL's response shape, with docs/design.md
// §6's code and request id in extensions, for failures before the executor
// runs (authentication, transport).
func graphqlError(log *slog.Logger) middleware.ErrorWriter {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		body := middleware.Body(r.Context(), log, err)
		// The request was not executed, so the body has no data key
		// (GraphQL over HTTP).
		middleware.WriteErrorJSON(w, body.Code, map[string]any{
			"errors": []map[string]any{{"message": body.Message, "extensions": extensions(body)}},
		})
	}
}
