package core_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// BenchmarkColdSearch is the stampede of docs/performance.md's "Search
// under a cold cache": right after a write, 16 members search the
// procedures at once for a term ~16 % of them match ("audit": one of the
// seed's 18 words, drawn for the name and twice for the content), each reading the first page of 20. The workspace is W
// scaled down to 10 000 procedures, beside a noise workspace of 2 500. An
// op is one round: the write (a priority), then the 16 searches, through
// core (the response cache, keyed by member, would not share them).
// Reported: round-ms, the wall time of the 16 searches (the slowest one's
// latency, as they start together); slowest-p99-ms, the 99th percentile of
// that over the rounds; stmts/req and counts/round, the statements the
// searches sent. It uses only what the commit before shared counts had, so
// that it measures before and after (docs/performance.md, "Search under a
// cold cache").
func BenchmarkColdSearch(b *testing.B) {
	const searches = 16
	shape := bench.Shape{Procedures: 10_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3}
	for _, d := range dbtest.Dialects(b) {
		b.Run(d, func(b *testing.B) {
			db := dbtest.Open(b, d)
			ctx := context.Background()
			seeded, err := bench.Seed(ctx, db.Client, "Bench", "BEN", shape, 1)
			if err != nil {
				b.Fatal(err)
			}
			noise := shape
			noise.Procedures /= 4
			if _, err := bench.Seed(ctx, db.Client, "Noise", "NOI", noise, 2); err != nil {
				b.Fatal(err)
			}
			if d == dialect.Postgres {
				if _, err := db.SQL.ExecContext(ctx, "ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			svc := core.New(db.Client)
			admin := viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: seeded.WorkspaceID, MemberID: seeded.MemberIDs[0], Role: viewer.RoleAdmin})
			target, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(seeded.WorkspaceID)).First(viewer.System(ctx))
			if err != nil {
				b.Fatal(err)
			}
			var counts atomic.Int64
			db.Record(func(st database.Statement) {
				if strings.Contains(strings.ToUpper(st.Query), "COUNT(") {
					counts.Add(1)
				}
			})
			b.Cleanup(func() { db.Record(nil) })
			filter := core.ProcedureFilter{Search: "audit"}
			first := 20
			priorities := []string{"LOW", "MEDIUM", "HIGH"}
			var rounds []time.Duration
			var statements, countStatements int64
			var matched atomic.Int64
			round := 0
			for b.Loop() {
				round++
				if _, err := svc.UpdateProcedure(admin, target.ShortID, core.UpdateProcedureInput{Priority: core.Some(priorities[round%3])}); err != nil {
					b.Fatal(err)
				}
				ws, err := db.Client.Workspace.Get(viewer.System(ctx), seeded.WorkspaceID)
				if err != nil {
					b.Fatal(err)
				}
				before, beforeCounts := db.Statements(), counts.Load()
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, searches)
				for i := range searches {
					member := viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: ws.ID, MemberID: seeded.MemberIDs[i%len(seeded.MemberIDs)],
						Role: viewer.RoleMember, WorkspaceVersion: ws.Version, VersionKnown: true})
					wg.Go(func() {
						l, err := svc.FindProcedures(member, filter, core.ProcedureOrder{}, core.Window{First: &first})
						if err == nil {
							matched.Store(int64(l.Total)) // the same in every search
						}
						errs <- err
					})
				}
				wg.Wait()
				rounds = append(rounds, time.Since(start))
				statements += db.Statements() - before
				countStatements += counts.Load() - beforeCounts
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			var sum time.Duration
			for _, r := range rounds {
				sum += r
			}
			slices.Sort(rounds)
			b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(rounds)), "round-ms")
			b.ReportMetric(float64(rounds[(len(rounds)-1)*99/100].Microseconds())/1000, "slowest-p99-ms")
			b.ReportMetric(float64(statements)/float64(len(rounds)*searches), "stmts/req")
			b.ReportMetric(float64(countStatements)/float64(len(rounds)), "counts/round")
			b.ReportMetric(float64(matched.Load())/float64(shape.Procedures)*100, "matched-%")
		})
	}
}
