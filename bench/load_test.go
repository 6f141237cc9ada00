package bench_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// TestLoadToolVerifiesWrites runs the load tool briefly, with a write mix,
// against a real server on both databases and both APIs: no errors, and every
// acknowledged create and delete verified afterwards.
func TestLoadToolVerifiesWrites(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		for _, api := range []string{"rest", "graphql"} {
			t.Run(dialect+"/"+api, func(t *testing.T) {
				db := dbtest.Open(t, dialect)
				seeded, err := bench.Seed(context.Background(), db.Client, "Load", "LOD", bench.Shape{Procedures: 200, Projects: 3, Categories: 2, Members: 3, MaxComments: 2}, 7)
				if err != nil {
					t.Fatal(err)
				}
				ts := httptest.NewServer(server.NewHandler(server.Deps{DB: db, Service: core.New(db.Client), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
				defer ts.Close()
				cfg := bench.LoadConfig{URL: ts.URL, Token: seeded.AdminToken, Clients: 4, Duration: time.Minute,
					MaxRequests: 200, API: api, WriteRatio: 0.5, PageSize: 20}
				rep, err := bench.Load(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				rep.Print(&out, cfg)
				t.Log(out.String())
				if rep.Requests != 200 || len(rep.Errors) != 0 {
					t.Fatalf("requests %d, errors %v", rep.Requests, rep.Errors)
				}
				if rep.Created == 0 || rep.Deleted == 0 || !rep.Verified {
					t.Fatalf("writes not exercised or not verified:\n%s", out.String())
				}
				if !strings.Contains(out.String(), "verification=OK") {
					t.Fatalf("report lacks the verification line:\n%s", out.String())
				}
			})
		}
	}
}
