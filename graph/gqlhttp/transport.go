package gqlhttp

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/graph/gqlrequest"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
)

// decoded is the GET and POST transport. It runs the request the guard
// decoded (gqlrequest.FromContext) instead of decoding the body or the
// query string again, as gqlgen's own transports would: every transport
// (GET, POST, Server-Sent Events, WebSocket) takes its variables from
// gqlrequest, so a variable means the same whichever carried it (numbers
// kept as sent, json.Number). Without the guard (a test serving the
// executor alone) it decodes the request itself, with the same decoder.
type decoded struct{}

var _ graphql.Transport = decoded{}

func (decoded) Supports(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	switch r.Method {
	case http.MethodGet:
		return true
	case http.MethodPost:
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		return err == nil && mt == "application/json"
	}
	return false
}

func (decoded) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	start := graphql.Now()
	// The guard answered the Accept header (negotiate) and left the one
	// media type to answer in.
	contentType := mediaJSON
	if r.Header.Get("Accept") == mediaGraphQLResponse {
		contentType = mediaGraphQLResponse
	}
	w.Header().Set("Content-Type", contentType)
	oc, errs, err := gqlrequest.Operation(ctx, r, middleware.MaxBodyBytes, exec, start)
	if err != nil {
		w.WriteHeader(middleware.HTTPStatus(apperr.CodeOf(err)))
		writeResponse(w, exec.DispatchError(ctx, gqlrequest.Refusal(err)))
		return
	}
	if errs != nil {
		// As gqlgen's transports answer: a request refused before it ran
		// (statusMapper turns 422 into 400).
		status := http.StatusOK
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			status = http.StatusUnprocessableEntity
			if contentType == mediaGraphQLResponse {
				status = http.StatusBadRequest
			}
		}
		w.WriteHeader(status)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, oc), errs))
		return
	}
	if r.Method == http.MethodGet && oc.Operation.Operation != ast.Query {
		// getRefusal answers it (the guard refuses most of these first: a
		// persisted query's operation is only known here).
		w.WriteHeader(http.StatusNotAcceptable)
		writeResponse(w, &graphql.Response{Errors: gqlerror.List{{Message: "GET runs queries only; send other operations with POST"}}})
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, oc)
	writeResponse(w, responses(ctx))
}

// writeResponse writes resp as JSON, as gqlgen's transports do.
func writeResponse(w io.Writer, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"internal"}}]}`)
	}
	_, _ = w.Write(b)
}
