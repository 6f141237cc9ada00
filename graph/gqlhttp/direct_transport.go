package gqlhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/middleware"
)

// direct wraps gqlgen's GET and POST transports so that an executed
// operation's response is written as it is, without a second encoding.
//
// gqlgen marshals an operation's data into a buffer, and its transports then
// json.Marshal the response around it, which copies the data and scans it
// again byte by byte to compact it (a page of 50 procedures is ~100 KB: 7 %
// of its CPU). The data is compact JSON already, so the bytes json.Marshal
// would write are `{"data":` + the data with <, >, &, U+2028 and U+2029
// escaped (encoding/json's HTML escaping) + `}`: writeData writes exactly
// those. Responses with anything else (errors, extensions, no data) are
// left to gqlgen, as is everything that is not an executed operation
// (refusals, parse and validation errors).
type direct struct{ graphql.Transport }

func (d direct) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	dw := &directWriter{ResponseWriter: w}
	d.Transport.Do(dw, r, directExec{GraphExecutor: exec, w: dw})
}

// directExec is exec whose operation responses are written by writeData
// when they are data alone.
type directExec struct {
	graphql.GraphExecutor
	w *directWriter
}

func (e directExec) DispatchOperation(ctx context.Context, oc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	next, ctx := e.GraphExecutor.DispatchOperation(ctx, oc)
	return func(ctx context.Context) *graphql.Response {
		resp := next(ctx)
		if resp != nil && len(resp.Data) == 0 && len(resp.Errors) > 0 && isTooLarge(resp.Errors[0]) && !e.w.written {
			// A response over its bound (bound_responses.go) is an error of the
			// request as a whole, answered with its code's status.
			e.w.WriteHeader(middleware.HTTPStatus(apperr.PayloadTooLarge))
			return resp
		}
		if resp == nil || len(resp.Data) == 0 || len(resp.Errors) > 0 || len(resp.Extensions) > 0 ||
			resp.Label != "" || resp.Path != nil || resp.HasNext != nil || e.w.written {
			return resp
		}
		e.w.writeData(resp.Data)
		// The transport encodes what we return and writes it: directWriter
		// drops that write, the response having been written.
		return &graphql.Response{}
	}, ctx
}

// DispatchError makes the response of a request that was not executed (a
// body or parameters gqlgen cannot decode, a document refused before it
// ran, a persisted-query miss): gqlgen's Response always has a data key,
// null here, which a request not executed must not have (GraphQL over
// HTTP), whatever its status.
func (e directExec) DispatchError(ctx context.Context, list gqlerror.List) *graphql.Response {
	e.w.notExecuted = true
	return e.GraphExecutor.DispatchError(ctx, list)
}

// directWriter is the transport's writer: after writeData it drops the
// transport's own write of the (placeholder) response, its next write; for
// a request not executed, it drops the response's data key.
type directWriter struct {
	http.ResponseWriter
	written, dropped, notExecuted bool
}

func (w *directWriter) Write(b []byte) (int, error) {
	switch {
	case w.written && !w.dropped:
		w.dropped = true
		return len(b), nil
	case w.notExecuted:
		if _, err := w.ResponseWriter.Write(withoutData(b)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *directWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var (
	dataPrefix = []byte(`{"data":`)
	dataSuffix = []byte(`}`)
)

// writeData writes the response {"data": data} as json.Marshal would.
func (w *directWriter) writeData(data []byte) {
	w.written = true
	if needsHTMLEscape(data) {
		var b bytes.Buffer
		b.Grow(len(dataPrefix) + len(data) + 64 + len(dataSuffix))
		b.Write(dataPrefix)
		json.HTMLEscape(&b, data)
		b.Write(dataSuffix)
		_, _ = w.ResponseWriter.Write(b.Bytes())
		return
	}
	_, _ = w.ResponseWriter.Write(dataPrefix)
	_, _ = w.ResponseWriter.Write(data)
	_, _ = w.ResponseWriter.Write(dataSuffix)
}

// needsHTMLEscape reports whether data holds a byte json.HTMLEscape may
// change: <, >, & or the first byte of U+2028 and U+2029.
func needsHTMLEscape(data []byte) bool {
	return bytes.IndexByte(data, '<') >= 0 || bytes.IndexByte(data, '>') >= 0 ||
		bytes.IndexByte(data, '&') >= 0 || bytes.IndexByte(data, 0xE2) >= 0
}
