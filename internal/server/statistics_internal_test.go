package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestStatisticsAtStart: the server refreshes a SQLite database's planner
// statistics before serving, so that a file filled before the start (a
// seed, a copy, growth since the last start) is planned with them from the
// first request; on PostgreSQL it leaves them to autovacuum.
func TestStatisticsAtStart(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db := dbtest.Open(t, dialect)
			ctx := context.Background()
			if _, err := core.New(db.Client).CreateWorkspace(ctx, core.NewWorkspace{Name: "S", Key: "STA", AdminName: "A", AdminEmail: "a@sta.example"}); err != nil {
				t.Fatal(err)
			}
			stop := startStatistics(ctx, db, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
			stop()
			if dialect != "sqlite" {
				return
			}
			var tables int
			if err := db.SQL.QueryRowContext(ctx, "SELECT count(DISTINCT tbl) FROM sqlite_stat1 WHERE tbl IN ('workspaces', 'members')").Scan(&tables); err != nil {
				t.Fatalf("no statistics after the start: %v", err)
			}
			if tables != 2 {
				t.Errorf("statistics for %d of the 2 tables with rows; want both", tables)
			}
		})
	}
}
