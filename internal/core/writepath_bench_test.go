package core_test

import (
	"context"
	"fmt"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
)

// BenchmarkWritePath is each kind of procedure write, as the server runs
// it (announced as internal/server announces), on each database, with the
// statements it sends per op (stmts/op, the transaction's BEGIN and COMMIT
// not counted). Run on the commit before the change log and after it, it
// gives what appending each write's event costs (docs/performance.md,
// "The change log").
func BenchmarkWritePath(b *testing.B) {
	for _, d := range dbtest.Dialects(b) {
		b.Run(d, func(b *testing.B) {
			db := dbtest.Open(b, d)
			hub := events.NewHub(events.HubOptions{})
			b.Cleanup(hub.Close)
			announcer := events.NewLocalAnnouncer(hub)
			if d == dialect.Postgres {
				announcer = events.NewPostgresAnnouncer(hub)
			}
			svc := core.New(db.Client, core.WithAnnouncer(announcer), core.WithLockPolicy(core.LockPolicyFor(d)))
			boot, err := svc.CreateWorkspace(context.Background(), core.NewWorkspace{Name: "Bench", Key: "BEN", AdminName: "Admin", AdminEmail: "admin@example.com"})
			if err != nil {
				b.Fatal(err)
			}
			admin, err := svc.ActAsAdmin(context.Background(), boot.Workspace.ID.String())
			if err != nil {
				b.Fatal(err)
			}
			proj, err := svc.CreateProject(admin, core.ProjectInput{Name: core.Some("P")})
			if err != nil {
				b.Fatal(err)
			}
			cat := mustCategory(b, svc, admin)
			due := dueAt
			input := func(name string) core.CreateProcedureInput {
				return core.CreateProcedureInput{Name: name, Priority: "LOW", State: "TODO", DueAt: &due,
					CategoryID: cat, DoerID: boot.Admin.ID.String(), ProjectID: proj.ID.String()}
			}
			target, err := svc.CreateProcedure(admin, input("target"))
			if err != nil {
				b.Fatal(err)
			}
			priorities := []string{"LOW", "MEDIUM", "HIGH"}
			states := []string{"TODO", "IN_PROGRESS"}
			writes := []struct {
				name  string
				write func(i int) error
			}{
				{"create", func(i int) error {
					_, err := svc.CreateProcedure(admin, input(fmt.Sprint("bench ", i)))
					return err
				}},
				{"update", func(i int) error {
					_, err := svc.UpdateProcedure(admin, target.ShortID, core.UpdateProcedureInput{Priority: core.Some(priorities[i%3])})
					return err
				}},
				{"move", func(i int) error {
					_, err := svc.MoveProcedure(admin, target.ShortID, &states[i%2], nil, nil)
					return err
				}},
				{"comment", func(i int) error {
					c, err := svc.AddComment(admin, target.ShortID, "a comment")
					if err != nil {
						return err
					}
					return svc.DeleteComment(admin, c.ID.String())
				}},
			}
			for _, w := range writes {
				b.Run(w.name, func(b *testing.B) {
					before := db.Statements()
					n := 0
					for b.Loop() {
						if err := w.write(n); err != nil {
							b.Fatal(err)
						}
						n++
					}
					b.ReportMetric(float64(db.Statements()-before)/float64(n), "stmts/op")
				})
			}
		})
	}
}
