package apitest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/server"
)

// ListQuery is the frontend's list page: procedures with every nested edge
// and their newest 3 comments (every comment of the seeded shapes): a page
// of 100 costs 1 + 1 + 100 × 7 = 702 of the complexity limit.
const ListQuery = `query List($first: Int!) {
  procedures(first: $first) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id shortId name priority state content categoryId doerId creatorId position
      dueAt createdAt updatedAt projectId workspaceId captureId displayVideo isFineTunedData
      category { id name }
      doer { id name email }
      project { id name }
      comments(last: 3) { nodes { id text createdAt } }
    }
  }
}`

// TwoViewsQuery is ListQuery's page showing two views of each procedure's
// comments (its oldest, its newest 2), whose union is read at once.
const TwoViewsQuery = `query Views($first: Int!) {
  procedures(first: $first) {
    totalCount
    nodes {
      id category { id } doer { id } project { id }
      comments(first: 1) { nodes { id } }
      newest: comments(last: 2) { nodes { id text author { name } } }
    }
  }
}`

// Lists is a synthetic workspace (bench.Seed) beside a noise workspace a
// quarter its size, served by the whole handler in-process: what the
// procedure-list benchmarks measure and the statement-count tests guard.
type Lists struct {
	DB      *database.DB
	Handler http.Handler
	// Token is the seeded workspace's admin's.
	Token string
}

// NewLists seeds a database of dialect with shape and serves it with deps'
// options (DB, Service and Log are filled in).
func NewLists(t testing.TB, dialect string, shape bench.Shape, deps server.Deps) *Lists {
	t.Helper()
	db := dbtest.Open(t, dialect)
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Bench", "BEN", shape, 1)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	// A noise workspace: tenancy must keep its rows out of every count.
	noise := shape
	noise.Procedures /= 4
	if _, err := bench.Seed(ctx, db.Client, "Noise", "NOI", noise, 2); err != nil {
		t.Fatalf("seed noise: %v", err)
	}
	// Production databases have statistics: PostgreSQL's from autovacuum,
	// which has not yet got to a freshly bulk-loaded one, SQLite's from
	// the refresh the server runs at start.
	if dialect == "postgres" {
		if _, err := db.SQL.ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
	} else if err := db.RefreshStatistics(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Writes announce their changes as in production, and the handler
	// hears them (its recent writes): what a read costs after a write
	// depends on it.
	hub := events.NewHub(events.HubOptions{})
	deps.DB, deps.Service, deps.Log, deps.Hub = db, core.New(db.Client, core.WithAnnouncer(server.Announcer(db, hub))), log, hub
	h := server.NewHandler(deps)
	return &Lists{DB: db, Handler: h, Token: seeded.AdminToken}
}

// GraphQLRequest is a POST /graphql of query with $first.
func (l *Lists) GraphQLRequest(query string, first int) *http.Request {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"first": first}})
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.Token)
	return req
}

// ListResponse is the answer to ListQuery or TwoViewsQuery.
type ListResponse struct {
	Data struct {
		Procedures struct {
			TotalCount int
			Nodes      []struct {
				ID       string
				Category *struct{ ID string }
				Doer     *struct{ ID string }
				Project  *struct{ ID string }
				Comments struct{ Nodes []struct{ ID string } }
			}
		}
	}
	Errors []json.RawMessage
}

// GraphQLList sends GraphQLRequest(query, first) and returns its answer and
// the statements it cost; it fails t on any error.
func (l *Lists) GraphQLList(t testing.TB, query string, first int) (ListResponse, int64) {
	t.Helper()
	before := l.DB.Statements()
	rec := httptest.NewRecorder()
	l.Handler.ServeHTTP(rec, l.GraphQLRequest(query, first))
	statements := l.DB.Statements() - before
	var out ListResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("list: status %d: %s", rec.Code, rec.Body.String())
	}
	return out, statements
}

// RESTRequest is a GET /procedures?limit=limit.
func (l *Lists) RESTRequest(limit int) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/procedures?limit="+strconv.Itoa(limit), nil)
	req.Header.Set("Authorization", "Bearer "+l.Token)
	return req
}

// RESTListResponse is the answer to RESTRequest.
type RESTListResponse struct {
	Data []struct {
		ID       string
		Category *struct{ ID string }
		Doer     *struct{ ID string }
		Project  *struct{ ID string }
		Comments []struct{ ID string }
	}
	Meta struct{ Total int }
}

// RESTList sends RESTRequest(limit) and returns its answer and the
// statements it cost; it fails t unless it answered 200.
func (l *Lists) RESTList(t testing.TB, limit int) (RESTListResponse, int64) {
	t.Helper()
	before := l.DB.Statements()
	rec := httptest.NewRecorder()
	l.Handler.ServeHTTP(rec, l.RESTRequest(limit))
	statements := l.DB.Statements() - before
	var out RESTListResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("REST list: status %d: %s", rec.Code, rec.Body.String())
	}
	return out, statements
}
