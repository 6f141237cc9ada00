package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// dashboardWorkspace seeds 25 projects (the dashboard shows 20) of about 12
// procedures each (some past the page of 10, some short of it) with 0 to 7
// comments each (some past the page of 5), and serves it uncached.
func dashboardWorkspace(t *testing.T, dialect string) (*bench.Seeded, http.Handler) {
	db := dbtest.Open(t, dialect)
	seeded, err := bench.Seed(context.Background(), db.Client, "Load", "LOD", bench.Shape{Procedures: 300, Projects: 25, Categories: 3, Members: 4, MaxComments: 7}, 7)
	if err != nil {
		t.Fatal(err)
	}
	h := server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return seeded, h
}

// tamper rewrites the answers to the dashboard query with edit, passing the
// rest through.
type tamper struct {
	next http.Handler
	edit func(data map[string]any)
}

func (tp *tamper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if tp.edit == nil || !strings.Contains(string(raw), "query Dashboard") {
		tp.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	tp.next.ServeHTTP(rec, r)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if data, ok := body["data"].(map[string]any); ok {
		tp.edit(data)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// TestLoadToolDashboardMix runs the dashboard mix (reads of the project
// dashboard, 30% writes changing priorities) for a bounded number of
// requests on both databases: reads and writes both happen, every answer is
// checked and passes, nothing fails, and every updated procedure reads back
// with its last acknowledged priority. Then the same run against a server
// whose dashboards lack a procedure must report the failed check.
func TestLoadToolDashboardMix(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			seeded, h := dashboardWorkspace(t, dialect)
			tp := &tamper{next: h}
			ts := httptest.NewServer(tp)
			defer ts.Close()
			cfg := bench.LoadConfig{URL: ts.URL, Token: seeded.AdminToken, Clients: 4, Duration: time.Minute,
				MaxRequests: 80, API: "graphql", Mix: bench.MixDashboard, WriteRatio: 0.3, Pool: 60}
			rep, err := bench.Load(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.Print(&out, cfg)
			t.Log(out.String())
			if rep.Requests != 80 || rep.Reads+rep.Writes != 80 || len(rep.Errors) != 0 {
				t.Fatalf("requests %d (%d reads, %d writes), errors %v", rep.Requests, rep.Reads, rep.Writes, rep.Errors)
			}
			if rep.Reads < 30 || rep.Writes < 10 || rep.ShapeChecked != rep.Reads || rep.Updated != rep.Writes || rep.Checked == 0 || !rep.Verified {
				t.Fatalf("mix not exercised or not verified: %d reads (%d checked), %d writes (%d acknowledged, %d verified):\n%s",
					rep.Reads, rep.ShapeChecked, rep.Writes, rep.Updated, rep.Checked, out.String())
			}
			for _, line := range []string{"mix=dashboard pool=60 projects=20 procedures=10 comments=5", "reads/s=", "write_p99=",
				"errors: none", "dashboard: checked=", "shape=OK", "verification=OK"} {
				if !strings.Contains(out.String(), line) {
					t.Fatalf("report lacks %q:\n%s", line, out.String())
				}
			}

			// A dashboard missing a procedure is caught, on every read.
			tp.edit = func(data map[string]any) {
				procs := path(data, "projects", "nodes", 0, "procedures").(map[string]any)
				nodes := procs["nodes"].([]any)
				procs["nodes"] = nodes[:len(nodes)-1]
			}
			cfg.MaxRequests, cfg.WriteRatio = 12, 0
			rep, err = bench.Load(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			out.Reset()
			rep.Print(&out, cfg)
			if rep.Errors["wrong_shape"] != 12 || rep.ShapeChecked != 12 || len(rep.ShapeNotes) == 0 ||
				!strings.Contains(out.String(), "shape=FAILED") || !strings.Contains(out.String(), "errors[wrong_shape]=12") {
				t.Fatalf("wrong dashboards not caught:\n%s", out.String())
			}

			// Checking every 4th answer of one client checks 3 of 12.
			cfg.Clients, cfg.CheckEvery = 1, 4
			rep, err = bench.Load(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			out.Reset()
			rep.Print(&out, cfg)
			if rep.Requests != 12 || rep.Errors["wrong_shape"] != 3 || rep.ShapeChecked != 3 || !strings.Contains(out.String(), "dashboard: checked=3 of 12 shape=FAILED") {
				t.Fatalf("want 3 of 12 answers checked, all failing:\n%s", out.String())
			}
		})
	}
}

// path walks data through map keys and slice indexes.
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	return v
}

// TestCheckDashboard checks real answers to the dashboard query, on both
// databases: as served they pass; each way of being wrong fails with its
// reason.
func TestCheckDashboard(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			seeded, h := dashboardWorkspace(t, dialect)
			answer := func(t *testing.T) map[string]any {
				body, _ := json.Marshal(map[string]any{"query": bench.DashboardQuery})
				req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+seeded.AdminToken)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if err := bench.CheckDashboard(rec.Body.Bytes()); err != nil {
					t.Fatalf("a real answer fails: %v\n%.2000s", err, rec.Body.String())
				}
				var out map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			// The seeded shape exercises both sides of every page.
			full, short, manyComments := false, false, false
			for _, p := range path(answer(t), "data", "projects", "nodes").([]any) {
				procs := path(p, "procedures")
				total := path(procs, "totalCount").(float64)
				full, short = full || total > bench.DashboardProcedures, short || total < bench.DashboardProcedures
				for _, pr := range path(procs, "nodes").([]any) {
					manyComments = manyComments || path(pr, "comments", "totalCount").(float64) > bench.DashboardComments
				}
			}
			if !full || !short || !manyComments {
				t.Fatalf("seeded shape misses a case: project past its page %t, short of it %t, procedure past its comment page %t", full, short, manyComments)
			}
			firstProject := func(a map[string]any) map[string]any {
				return path(a, "data", "projects", "nodes", 0).(map[string]any)
			}
			// procedureWithComments returns a procedure of the answer
			// with comments, and its comment connection.
			procedureWithComments := func(a map[string]any) map[string]any {
				for _, p := range path(a, "data", "projects", "nodes").([]any) {
					for _, pr := range path(p, "procedures", "nodes").([]any) {
						if cs := path(pr, "comments").(map[string]any); len(cs["nodes"].([]any)) > 0 {
							return cs
						}
					}
				}
				t.Fatal("no procedure with comments")
				return nil
			}
			cases := []struct {
				name string
				edit func(a map[string]any)
				want string
			}{
				{"GraphQLError", func(a map[string]any) {
					a["errors"] = []any{map[string]any{"message": "boom", "extensions": map[string]any{"code": "internal"}}}
				}, "error internal: boom"},
				{"NoData", func(a map[string]any) { delete(a, "data") }, "no data"},
				{"ProjectMissing", func(a map[string]any) {
					ps := path(a, "data", "projects").(map[string]any)
					ps["nodes"] = ps["nodes"].([]any)[1:]
				}, "19 projects of 25, want 20"},
				{"ProceduresTotalMissing", func(a map[string]any) {
					delete(path(firstProject(a), "procedures").(map[string]any), "totalCount")
				}, "no procedures.totalCount"},
				{"ProcedureMissing", func(a map[string]any) {
					procs := path(firstProject(a), "procedures").(map[string]any)
					procs["nodes"] = procs["nodes"].([]any)[1:]
				}, "procedures of"},
				{"HasNextPageWrong", func(a map[string]any) {
					info := path(firstProject(a), "procedures", "pageInfo").(map[string]any)
					info["hasNextPage"] = !info["hasNextPage"].(bool)
				}, "hasNextPage"},
				{"ProcedureOfAnotherProject", func(a map[string]any) {
					pr := path(firstProject(a), "procedures", "nodes", 0).(map[string]any)
					pr["project"] = path(a, "data", "projects", "nodes", 1, "procedures", "nodes", 0, "project")
				}, "lists LOD-"},
				{"CommentsTotalMissing", func(a map[string]any) {
					delete(path(firstProject(a), "procedures", "nodes", 0, "comments").(map[string]any), "totalCount")
				}, "no comments.totalCount"},
				{"CommentMissing", func(a map[string]any) {
					cs := procedureWithComments(a)
					cs["nodes"] = cs["nodes"].([]any)[1:]
				}, "comments of"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					a := answer(t)
					tc.edit(a)
					raw, _ := json.Marshal(a)
					err := bench.CheckDashboard(raw)
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("got %v, want an error containing %q", err, tc.want)
					}
				})
			}
		})
	}
}

// TestLoadToolDashboardNeedsGraphQL: the dashboard's nested connections are
// GraphQL's; asked over REST the tool refuses before sending anything.
func TestLoadToolDashboardNeedsGraphQL(t *testing.T) {
	_, err := bench.Load(context.Background(), bench.LoadConfig{URL: "http://127.0.0.1:1", Token: "t", Clients: 1,
		Duration: time.Second, API: "rest", Mix: bench.MixDashboard})
	if err == nil || !strings.Contains(err.Error(), "only GraphQL") {
		t.Fatalf("got %v", err)
	}
}

// TestDashboardQueryComplexity pins the figure bench.DashboardQuery's
// comment gives, under the limit the server enforces.
func TestDashboardQueryComplexity(t *testing.T) {
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: graph.NewResolver(nil)}).Schema()
	doc, err := gqlparser.LoadQuery(schema, bench.DashboardQuery)
	if err != nil {
		t.Fatal(err)
	}
	n, gerr := gqlhttp.Complexity(context.Background(), &graphql.OperationContext{Doc: doc}, doc.Operations[0])
	if gerr != nil {
		t.Fatal(gerr)
	}
	if n != 2061 || n > gqlhttp.MaxComplexity {
		t.Fatalf("complexity %d, want 2061 (limit %d)", n, gqlhttp.MaxComplexity)
	}
}
