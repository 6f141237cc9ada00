package events

import (
	"sync"
	"testing"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// pendingLog is what a hub's observers heard: the versions observed as
// committed, and each pending change's reports.
type pendingLog struct {
	mu       sync.Mutex
	observed map[int64]bool
	reports  map[int64][]pendingReport
}

type pendingReport struct {
	committed bool
	// observedFirst: the committed change had reached the observers
	// before the writer reported it, so that a reader woken by the report
	// finds it known.
	observedFirst bool
}

func listenPending(h *Hub) *pendingLog {
	l := &pendingLog{observed: map[int64]bool{}, reports: map[int64][]pendingReport{}}
	h.Observe(func(e Notification) {
		l.mu.Lock()
		l.observed[e.Version] = true
		l.mu.Unlock()
	})
	h.ObservePending(func(e Notification) func(bool) {
		return func(committed bool) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.reports[e.Version] = append(l.reports[e.Version], pendingReport{committed, l.observed[e.Version]})
		}
	})
	return l
}

// take returns and forgets the reports heard so far.
func (l *pendingLog) take() map[int64][]pendingReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reports
	l.reports = map[int64][]pendingReport{}
	return r
}

// Every change a write announces is pending from its announcement to its
// commit's answer, and its writer reports the outcome exactly once:
// committed (after the change was recorded) only when the commit answered
// success; not committed when the write failed after announcing, when the
// connection broke before COMMIT, and when the commit's answer was lost
// (its outcome unknown to the writer, although it committed: readers then
// learn of it from the notification, never from the pending change).
func TestPendingChangesAreReportedOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		h := NewHub(HubOptions{})
		t.Cleanup(h.Close)
		log := listenPending(h)
		var ann *failAfter
		var svc *core.Service
		if db.Dialect == "postgres" {
			ann = &failAfter{Announcer: NewPostgresAnnouncer(h)}
			svc = core.New(db.Client, core.WithAnnouncer(statementFailAfter{ann}), core.WithLockPolicy(core.SharedFieldUpdates))
		} else {
			ann = &failAfter{Announcer: NewLocalAnnouncer(h)}
			svc = core.New(db.Client, core.WithAnnouncer(ann))
		}
		f := setup(t, db, svc, "PND")
		faults := dbtest.InjectFaults(t, db)
		p := f.create(t, "Pending")
		log.take()
		priority := []string{"HIGH", "LOW"}
		n := 0
		update := func() error { // a field update: shared on PostgreSQL
			n++
			_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{Priority: core.Some(priority[n%2])})
			return err
		}
		move := func() error { // exclusive
			n++
			_, err := svc.MoveProcedure(f.admin, p.ID.String(), []*string{strp("IN_PROGRESS"), strp("TODO")}[n%2], nil, nil)
			return err
		}
		cases := []struct {
			name      string
			write     func() error
			fault     func()
			committed bool // what the writer must report
			stored    bool // whether the version moved in the database
			// pendingSQLite: whether the change was pending at all on
			// SQLite, whose announcer makes it pending only as it
			// commits (PostgreSQL's, at its statement).
			pendingSQLite bool
		}{
			{"update", update, nil, true, true, true},
			{"move", move, nil, true, true, true},
			{"failed after announcing", move, func() { ann.fail.Store(true) }, false, false, false},
			{"connection broken before COMMIT", update, func() { faults.DropCommit(`UPDATE procedures`) }, false, false, true},
			{"commit's answer lost", update, func() { faults.LoseCommitAnswer(`UPDATE procedures`) }, false, true, true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := f.version(t)
				if tc.fault != nil {
					tc.fault()
				}
				err := tc.write()
				ann.fail.Store(false)
				if (err == nil) != tc.committed {
					t.Fatalf("write: %v (%s)", err, apperr.CodeOf(err))
				}
				if faults.Pending() != 0 {
					t.Fatal("the fault did not fire: nothing is tested")
				}
				after := f.version(t)
				if moved := after == before+1; moved != tc.stored {
					t.Fatalf("version %d → %d; want it moved: %v", before, after, tc.stored)
				}
				reports := log.take()
				if db.Dialect != "postgres" && !tc.pendingSQLite {
					if len(reports) != 0 {
						t.Fatalf("reports %v; want none (nothing was pending)", reports)
					}
					return
				}
				got := reports[before+1]
				if len(reports) != 1 || len(got) != 1 {
					t.Fatalf("reports %v; want one, of version %d", reports, before+1)
				}
				if got[0].committed != tc.committed {
					t.Fatalf("reported committed: %v, want %v", got[0].committed, tc.committed)
				}
				if tc.committed && !got[0].observedFirst {
					t.Fatal("reported committed before the change was recorded")
				}
			})
		}
	})
}
