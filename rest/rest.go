// Package rest serves docs/contract.md's REST endpoints for legacy clients.
// It is an adapter only: each handler decodes the request, calls the same
// GraphQL resolvers the /graphql endpoint runs (package graph: the generated
// resolver methods, or the entries they share with REST where REST must say
// which edges it shows or which page it wants), and encodes the contract's
// shapes. No business rule lives here.
//
// Files: rest.go routes and registers the endpoints; procedures.go,
// resources.go, events.go and webhook_routes.go are the handlers; params.go and decode.go
// read query strings and bodies; encode.go, shapes.go and etag.go write
// responses; openapi.go is the OpenAPI document.
package rest

import (
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/middleware"
	"github.com/procsvc/procsvc/internal/respcache"
)

// API is the REST face over the GraphQL resolvers.
type API struct {
	r   *graph.Resolver
	log *slog.Logger
}

// New returns the REST API over r.
func New(r *graph.Resolver, log *slog.Logger) *API { return &API{r: r, log: log} }

// route is one method and path pattern served. footprinted marks a GET
// whose response shows only procedures read through the core (their fields
// and edges, nothing else): core's footprint then covers all it depends on,
// and its cached answer stays valid through the writes that leave that
// footprint alone (internal/respcache). A page of a procedure's comments is
// such an edge: its handler reads the procedure through the core, which
// records it, and every comment write announces that procedure. Every other
// GET's cached answer lasts until the workspace's next write.
type route struct {
	Method, Path string
	handle       func(a *API, w http.ResponseWriter, r *http.Request) error
	footprinted  bool
}

// footprinted is route.footprinted, named for the table below.
const footprinted = true

// routes is every endpoint. The OpenAPI document lists exactly these (a test
// holds the two together).
var routes = []route{
	{"GET", "/procedures", (*API).listProcedures, footprinted},
	{"POST", "/procedures", (*API).createProcedure, false},
	{"GET", "/procedures/{id}", (*API).getProcedure, footprinted},
	{"PUT", "/procedures/{id}", (*API).updateProcedure, false},
	{"DELETE", "/procedures/{id}", (*API).deleteProcedure, false},
	{"GET", "/procedures/{id}/comments", (*API).listComments, footprinted},
	{"POST", "/procedures/{id}/comments", (*API).addComment, false},
	{"GET", "/projects", (*API).listProjects, false},
	{"POST", "/projects", (*API).createProject, false},
	{"GET", "/projects/{id}", (*API).getProject, false},
	{"PUT", "/projects/{id}", (*API).updateProject, false},
	{"DELETE", "/projects/{id}", (*API).deleteProject, false},
	{"GET", "/categories", (*API).listCategories, false},
	{"POST", "/categories", (*API).createCategory, false},
	{"GET", "/categories/{id}", (*API).getCategory, false},
	{"PUT", "/categories/{id}", (*API).updateCategory, false},
	{"DELETE", "/categories/{id}", (*API).deleteCategory, false},
	{"GET", "/members", (*API).listMembers, false},
	{"GET", "/members/{id}", (*API).getMember, false},
	// The change log (events.go): pruned without a write, so never cached
	// (graph.Resolver.HistoryPage vetoes it).
	{"GET", "/procedures/{id}/history", (*API).procedureHistory, false},
	{"GET", "/events", (*API).listEvents, false},
	{"POST", "/webhooks", (*API).createWebhook, false},
	{"GET", "/webhooks", (*API).listWebhooks, false},
	{"GET", "/webhooks/{id}", (*API).getWebhook, false},
	{"PUT", "/webhooks/{id}", (*API).updateWebhook, false},
	{"DELETE", "/webhooks/{id}", (*API).deleteWebhook, false},
	{"POST", "/webhooks/{id}/secret", (*API).rotateWebhookSecret, false},
	{"GET", "/webhooks/{id}/deliveries", (*API).listWebhookDeliveries, false},
	{"POST", "/webhook-deliveries/{id}/redeliver", (*API).redeliverWebhookDelivery, false},
}

// Register adds every endpoint to mux behind authenticate, plus a 405 answer
// (with Allow) for other methods on known paths.
func (a *API) Register(mux *http.ServeMux, authenticate func(http.Handler) http.Handler) {
	allowed := map[string][]string{}
	for _, rt := range routes {
		allowed[rt.Path] = append(allowed[rt.Path], rt.Method)
		mux.Handle(rt.Method+" "+rt.Path, authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := checkQuery(r.URL.RawQuery); err != nil {
				a.fail(w, r, err)
				return
			}
			if rt.Method == http.MethodGet {
				// No GET writes: its edges may come from what other
				// reads of the workspace's version loaded.
				loader.SharedMode(r.Context())
				respcache.MarkCacheable(r.Context(), rt.Path)
				if rt.footprinted {
					respcache.MarkFootprinted(r.Context())
				}
			}
			if err := rt.handle(a, w, r); err != nil {
				a.fail(w, r, err)
			}
		})))
	}
	for path, methods := range allowed {
		sort.Strings(methods)
		allow := strings.Join(methods, ", ")
		if contains(methods, "GET") {
			allow += ", HEAD"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			a.fail(w, r, apperr.New(apperr.MethodNotAllowed, "%s is not allowed on %s; allowed: %s", r.Method, path, allow))
		})
	}
	mux.Handle("GET /openapi.json", http.HandlerFunc(serveOpenAPI))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// fail answers err with docs/design.md §6's body.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	middleware.WriteError(w, r, a.log, err)
}

// ok answers v with 200.
func ok(w http.ResponseWriter, v any) error { return middleware.WriteJSON(w, http.StatusOK, v) }
