package core_test

// Reading the change log (docs/api.md, "Events"): a procedure's history and
// the events list page by keyset cursors on the version, stay exact while
// events are appended, filter, honour tenancy and refuse bad input; the
// retention prunes in batches and raises the workspace's horizon.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

func versions(evs []*ent.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Version
	}
	return out
}

// storedVersions are the versions of the events preds admit, as stored,
// newest first unless asc.
func (f *fixture) storedVersions(t *testing.T, asc bool, preds ...func(*ent.EventQuery) *ent.EventQuery) []int64 {
	t.Helper()
	q := f.db.Client.Event.Query().Where(event.WorkspaceID(f.boot.Workspace.ID))
	for _, p := range preds {
		q = p(q)
	}
	order := event.ByVersion()
	if !asc {
		order = event.ByVersion(sql.OrderDesc())
	}
	evs, err := q.Order(order).All(sys())
	if err != nil {
		t.Fatal(err)
	}
	return versions(evs)
}

// touch appends n events to p's history (priority updates and comments).
func (f *logFixture) touch(t *testing.T, p *ent.Procedure, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		var err error
		if i%3 == 2 {
			_, err = f.svc.AddComment(f.withKey, p.ID.String(), fmt.Sprintf("note %d", i))
		} else {
			_, err = f.svc.UpdateProcedure(f.withKey, p.ID.String(), core.UpdateProcedureInput{Name: core.Some(fmt.Sprintf("%s %d", p.Name, i))})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func page(n int) *int { return &n }

func TestProcedureHistoryPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "HIST")
		p := f.newProcedure(t, "paged", "TODO", f.project)
		other := f.newProcedure(t, "other", "TODO", f.project)
		f.touch(t, p, 24)
		f.touch(t, other, 4)
		want := f.storedVersions(t, false, func(q *ent.EventQuery) *ent.EventQuery { return q.Where(event.ProcedureID(p.ID)) })
		if len(want) != 25 {
			t.Fatalf("%d events stored", len(want))
		}
		viewerCtx, _ := f.as(t, viewer.RoleViewer)

		t.Run("ForwardWhileAppending", func(t *testing.T) {
			var got []int64
			var after *core.Cursor
			appended := 0
			for {
				l, err := f.svc.ProcedureHistory(viewerCtx, p.ShortID, core.Window{First: page(7), After: after})
				if err != nil {
					t.Fatal(err)
				}
				// Exact: every event of the procedure, those appended
				// since the first page included.
				if l.Total != len(want)+appended {
					t.Fatalf("total %d, want %d", l.Total, len(want)+appended)
				}
				got = append(got, versions(l.Items)...)
				if !l.PageInfo.HasNextPage {
					break
				}
				c := l.Cursor(l.Items[len(l.Items)-1])
				after = &c
				// New events land before the first page: the next page
				// neither repeats nor skips.
				f.touch(t, p, 2)
				appended += 2
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pages read %v, want %v", got, want)
			}
		})
		want = f.storedVersions(t, false, func(q *ent.EventQuery) *ent.EventQuery { return q.Where(event.ProcedureID(p.ID)) })

		t.Run("Backward", func(t *testing.T) {
			var got []int64
			var before *core.Cursor
			for {
				l, err := f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{Last: page(8), Before: before})
				if err != nil {
					t.Fatal(err)
				}
				got = append(versions(l.Items), got...)
				if !l.PageInfo.HasPreviousPage {
					break
				}
				c := l.Cursor(l.Items[0])
				before = &c
			}
			if !slices.Equal(got, want) {
				t.Fatalf("backward pages read %v, want %v", got, want)
			}
		})

		t.Run("ByNumber", func(t *testing.T) {
			l, err := f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{First: page(10), Start: 10})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(versions(l.Items), want[10:20]) || !l.PageInfo.HasNextPage {
				t.Fatalf("page 2 of 10: %v (more: %v), want %v", versions(l.Items), l.PageInfo.HasNextPage, want[10:20])
			}
		})

		t.Run("DefaultAndEmptyPages", func(t *testing.T) {
			l, err := f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{})
			if err != nil || len(l.Items) != core.DefaultHistoryPageSize {
				t.Fatalf("default page: %d events, %v", len(l.Items), err)
			}
			l, err = f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{First: page(0)})
			if err != nil || len(l.Items) != 0 || l.Total != len(want) || !l.PageInfo.HasNextPage {
				t.Fatalf("first: 0 = %d events, total %d, more %v, %v", len(l.Items), l.Total, l.PageInfo.HasNextPage, err)
			}
		})

		t.Run("NestedMatchesOne", func(t *testing.T) {
			empty := f.newProcedure(t, "fresh", "TODO", f.project)
			pages, err := f.svc.ProcedureHistories(viewerCtx, []uuid.UUID{p.ID, other.ID, empty.ID}, core.Window{First: page(5)})
			if err != nil {
				t.Fatal(err)
			}
			for _, proc := range []*ent.Procedure{p, other, empty} {
				one, err := f.svc.ProcedureHistory(viewerCtx, proc.ID.String(), core.Window{First: page(5)})
				if err != nil {
					t.Fatal(err)
				}
				got := pages[proc.ID]
				if got.Err != nil || got.List.Total != one.Total || !slices.Equal(versions(got.List.Items), versions(one.Items)) ||
					got.List.PageInfo != one.PageInfo {
					t.Fatalf("%s nested: %+v %v; alone: %v total %d", proc.Name, got.List, got.Err, versions(one.Items), one.Total)
				}
				// Their cursors are the same list's.
				if n := len(one.Items); n > 0 && got.List.Cursor(got.List.Items[n-1]) != one.Cursor(one.Items[n-1]) {
					t.Fatalf("%s: nested and single cursors differ", proc.Name)
				}
			}
			// A cursor of one procedure's history refuses the others'.
			c := pages[p.ID].List.Cursor(pages[p.ID].List.Items[4])
			pages, err = f.svc.ProcedureHistories(viewerCtx, []uuid.UUID{p.ID, other.ID}, core.Window{First: page(5), After: &c})
			if err != nil {
				t.Fatal(err)
			}
			if pages[p.ID].Err != nil || !slices.Equal(versions(pages[p.ID].List.Items), want[5:10]) {
				t.Fatalf("the cursor's own history: %v", pages[p.ID])
			}
			wantInvalid(t, pages[other.ID].Err, "after")
		})

		t.Run("DeletedProcedure", func(t *testing.T) {
			gone := f.newProcedure(t, "gone", "TODO", f.project)
			f.touch(t, gone, 2)
			if err := f.svc.DeleteProcedure(f.withKey, gone.ShortID); err != nil {
				t.Fatal(err)
			}
			l, err := f.svc.ProcedureHistory(viewerCtx, gone.ID.String(), core.Window{})
			if err != nil || l.Total != 4 || core.EventKind(l.Items[0].Kind) != core.EventProcedureDeleted {
				t.Fatalf("a deleted procedure's history by id: %v, %v", l, err)
			}
			_, err = f.svc.ProcedureHistory(viewerCtx, gone.ShortID, core.Window{})
			wantCode(t, err, apperr.NotFound)
		})
	})
}

func TestProcedureHistoryRefuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "HREF")
		p := f.newProcedure(t, "mine", "TODO", f.project)
		f.touch(t, p, 3)
		theirs := newLogFixture(t, db, "HOTH")
		foreign := theirs.newProcedure(t, "theirs", "TODO", theirs.project)
		theirs.touch(t, foreign, 3)
		l, err := f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{First: page(2)})
		if err != nil {
			t.Fatal(err)
		}
		mine := l.Cursor(l.Items[1])
		events, err := f.svc.Events(f.withKey, core.EventFilter{}, core.EventOrder{}, core.Window{First: page(2)})
		if err != nil {
			t.Fatal(err)
		}
		ofEvents := events.Cursor(events.Items[1])
		other := f.newProcedure(t, "other", "TODO", f.project)
		bad := core.Cursor("bm90IGEgY3Vyc29y")
		for _, row := range []struct {
			name, id string
			w        core.Window
			code     apperr.Code
			field    string
		}{
			{"unknown shortId", "HREF-99", core.Window{}, apperr.NotFound, ""},
			{"unknown id", uuid.Must(uuid.NewV7()).String(), core.Window{}, apperr.NotFound, ""},
			{"an id of another kind", f.project.ID.String(), core.Window{}, apperr.NotFound, ""},
			{"not an id", "nonsense", core.Window{}, apperr.NotFound, ""},
			{"another workspace's procedure", foreign.ID.String(), core.Window{}, apperr.NotFound, ""},
			{"first over the maximum", p.ID.String(), core.Window{First: page(core.MaxHistoryPageSize + 1)}, apperr.ValidationFailed, "first"},
			{"a negative last", p.ID.String(), core.Window{Last: page(-1)}, apperr.ValidationFailed, "last"},
			{"first and last", p.ID.String(), core.Window{First: page(1), Last: page(1)}, apperr.ValidationFailed, "last"},
			{"a malformed cursor", p.ID.String(), core.Window{After: &bad}, apperr.ValidationFailed, "after"},
			{"another procedure's cursor", other.ID.String(), core.Window{After: &mine}, apperr.ValidationFailed, "after"},
			{"the events list's cursor", p.ID.String(), core.Window{Before: &ofEvents}, apperr.ValidationFailed, "before"},
			{"a page and a cursor", p.ID.String(), core.Window{Start: 20, After: &mine}, apperr.ValidationFailed, "page"},
		} {
			_, err := f.svc.ProcedureHistory(f.withKey, row.id, row.w)
			if row.field != "" {
				wantInvalid(t, err, row.field)
			} else {
				wantCode(t, err, row.code)
			}
		}
		if _, err := f.svc.ProcedureHistory(context.Background(), p.ID.String(), core.Window{}); apperr.CodeOf(err) != apperr.Unauthenticated {
			t.Fatalf("without a viewer: %v", err)
		}
		// A procedure from before the change log (no event names it) has an
		// empty history, not a missing one.
		if _, err := f.db.Client.Event.Delete().Where(event.ProcedureID(other.ID)).Exec(sys()); err != nil {
			t.Fatal(err)
		}
		if l, err := f.svc.ProcedureHistory(f.withKey, other.ID.String(), core.Window{}); err != nil || l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("a procedure without events: %+v, %v", l, err)
		}
	})
}

func TestEventsList(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "EVL")
		memberCtx, m := f.as(t, viewer.RoleMember)
		p := f.newProcedure(t, "first", "TODO", f.project)
		q, err := f.svc.CreateProcedure(memberCtx, f.input("second", "TODO", f.project))
		if err != nil {
			t.Fatal(err)
		}
		f.touch(t, p, 5)
		if _, err := f.svc.AddComment(memberCtx, q.ID.String(), "by the member"); err != nil {
			t.Fatal(err)
		}
		other := newLogFixture(t, db, "EVO")
		other.touch(t, other.newProcedure(t, "noise", "TODO", other.project), 5)
		viewerCtx, _ := f.as(t, viewer.RoleViewer)
		cut := f.version(t) - 6

		notTokens := func(q *ent.EventQuery) *ent.EventQuery {
			return q.Where(event.KindNotIn("token.created", "token.revoked"))
		}
		byKind := func(kinds ...string) func(*ent.EventQuery) *ent.EventQuery {
			return func(q *ent.EventQuery) *ent.EventQuery { return q.Where(event.KindIn(kinds...)) }
		}
		rows := []struct {
			name   string
			filter core.EventFilter
			order  core.EventOrder
			want   []int64
		}{
			// A viewer reads no token's events (TestEventsFollowTheRolesOfTheirRecords).
			{"everything", core.EventFilter{}, core.EventOrder{}, f.storedVersions(t, false, notTokens)},
			{"oldest first", core.EventFilter{}, core.EventOrder{OldestFirst: true}, f.storedVersions(t, true, notTokens)},
			{"after a version, oldest first", core.EventFilter{After: &cut}, core.EventOrder{OldestFirst: true},
				f.storedVersions(t, true, func(q *ent.EventQuery) *ent.EventQuery { return q.Where(event.VersionGT(cut)) })},
			{"after a version, newest first", core.EventFilter{After: &cut}, core.EventOrder{},
				f.storedVersions(t, false, func(q *ent.EventQuery) *ent.EventQuery { return q.Where(event.VersionGT(cut)) })},
			{"one kind", core.EventFilter{Kinds: []string{"procedure.updated"}}, core.EventOrder{}, f.storedVersions(t, false, byKind("procedure.updated"))},
			{"kinds, repeated", core.EventFilter{Kinds: []string{"comment.created", "member.added", "comment.created"}}, core.EventOrder{},
				f.storedVersions(t, false, byKind("comment.created", "member.added"))},
			{"an entity", core.EventFilter{EntityID: q.ID.String()}, core.EventOrder{},
				f.storedVersions(t, false, func(x *ent.EventQuery) *ent.EventQuery { return x.Where(event.EntityID(q.ID)) })},
			{"a procedure", core.EventFilter{ProcedureID: q.ID.String()}, core.EventOrder{},
				f.storedVersions(t, false, func(x *ent.EventQuery) *ent.EventQuery { return x.Where(event.ProcedureID(q.ID)) })},
			{"a project", core.EventFilter{ProjectID: f.project.ID.String()}, core.EventOrder{},
				f.storedVersions(t, false, func(x *ent.EventQuery) *ent.EventQuery { return x.Where(event.ProjectID(f.project.ID)) })},
			{"an actor", core.EventFilter{ActorID: m.ID.String()}, core.EventOrder{},
				f.storedVersions(t, false, func(x *ent.EventQuery) *ent.EventQuery { return x.Where(event.ActorMemberID(m.ID)) })},
			{"everything at once", core.EventFilter{After: &cut, Kinds: []string{"comment.created"}, ProcedureID: q.ID.String(), ActorID: m.ID.String()},
				core.EventOrder{}, f.storedVersions(t, false, func(x *ent.EventQuery) *ent.EventQuery {
					return x.Where(event.VersionGT(cut), event.KindEQ("comment.created"), event.ProcedureID(q.ID), event.ActorMemberID(m.ID))
				})},
			{"nothing matches", core.EventFilter{EntityID: uuid.Must(uuid.NewV7()).String()}, core.EventOrder{}, []int64{}},
		}
		for _, row := range rows {
			t.Run(row.name, func(t *testing.T) {
				if row.name != "nothing matches" && len(row.want) == 0 {
					t.Fatal("the test data holds no such event")
				}
				var got []int64
				var after *core.Cursor
				for pages := 0; ; pages++ {
					l, err := f.svc.Events(viewerCtx, row.filter, row.order, core.Window{First: page(3), After: after})
					if err != nil {
						t.Fatal(err)
					}
					if l.Total != len(row.want) {
						t.Fatalf("total %d, want %d", l.Total, len(row.want))
					}
					for _, e := range l.Items {
						if e.WorkspaceID != f.boot.Workspace.ID {
							t.Fatalf("another workspace's event %s", e.ID)
						}
					}
					got = append(got, versions(l.Items)...)
					if !l.PageInfo.HasNextPage {
						break
					}
					c := l.Cursor(l.Items[len(l.Items)-1])
					after = &c
				}
				if !slices.Equal(got, row.want) && !(len(got) == 0 && len(row.want) == 0) {
					t.Fatalf("read %v, want %v", got, row.want)
				}
			})
		}

		t.Run("Refused", func(t *testing.T) {
			neg := int64(-1)
			l, err := f.svc.Events(viewerCtx, core.EventFilter{Kinds: []string{"procedure.updated"}}, core.EventOrder{}, core.Window{First: page(1)})
			if err != nil {
				t.Fatal(err)
			}
			kindCursor := l.Cursor(l.Items[0])
			for _, row := range []struct {
				name   string
				filter core.EventFilter
				order  core.EventOrder
				w      core.Window
				field  string
			}{
				{"an unknown kind", core.EventFilter{Kinds: []string{"procedure.renamed"}}, core.EventOrder{}, core.Window{}, "kind"},
				{"GraphQL's spelling of a kind", core.EventFilter{Kinds: []string{"PROCEDURE_UPDATED"}}, core.EventOrder{}, core.Window{}, "kind"},
				{"too many kinds", core.EventFilter{Kinds: slices.Repeat([]string{"procedure.updated"}, core.MaxFilterValues+1)}, core.EventOrder{}, core.Window{}, "kind"},
				{"a bad entity id", core.EventFilter{EntityID: "x"}, core.EventOrder{}, core.Window{}, "entityId"},
				{"a bad procedure id", core.EventFilter{ProcedureID: "PRC-1"}, core.EventOrder{}, core.Window{}, "procedureId"},
				{"a bad project id", core.EventFilter{ProjectID: "1"}, core.EventOrder{}, core.Window{}, "projectId"},
				{"a bad actor id", core.EventFilter{ActorID: "me"}, core.EventOrder{}, core.Window{}, "actorId"},
				{"a negative version", core.EventFilter{After: &neg}, core.EventOrder{}, core.Window{}, "afterVersion"},
				{"a page over the maximum", core.EventFilter{}, core.EventOrder{}, core.Window{First: page(core.MaxEventPageSize + 1)}, "first"},
				{"a cursor of another filter", core.EventFilter{}, core.EventOrder{}, core.Window{After: &kindCursor}, "after"},
				{"a cursor of another order", core.EventFilter{Kinds: []string{"procedure.updated"}}, core.EventOrder{OldestFirst: true}, core.Window{After: &kindCursor}, "after"},
			} {
				_, err := f.svc.Events(viewerCtx, row.filter, row.order, row.w)
				wantInvalid(t, err, row.field)
			}
		})
	})
}

// eventsDelete matches a DELETE of events, in either dialect's quoting.
var eventsDelete = regexp.MustCompile("^DELETE FROM [`\"]events[`\"]")

// TestPruneEvents: the retention deletes only the events older than its
// cutoff, a batch per transaction, raises each pruned workspace's horizon,
// and a read after a version older than the horizon is told so instead of
// being answered with a hole.
func TestPruneEvents(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "PRUNE")
		other := newLogFixture(t, db, "PROTH")
		p := f.newProcedure(t, "aged", "TODO", f.project)
		f.touch(t, p, 9)
		other.touch(t, other.newProcedure(t, "young", "TODO", other.project), 3)
		all := f.storedVersions(t, true)
		// The oldest 8 events of f's workspace were written long ago.
		old := all[:8]
		horizon := old[len(old)-1]
		long := time.Now().Add(-90 * 24 * time.Hour)
		if _, err := f.db.Client.Event.Update().Where(event.WorkspaceID(f.boot.Workspace.ID), event.VersionLTE(horizon)).
			Modify(func(u *sql.UpdateBuilder) { u.Set(event.FieldCreatedAt, long) }).Save(sys()); err != nil {
			t.Fatal(err)
		}
		otherBefore := other.storedVersions(t, true)
		historyBefore, err := f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{})
		if err != nil {
			t.Fatal(err)
		}

		// The pruning service's statements, transactions' included.
		tl := &txLog{}
		pruner := core.New(ent.NewClient(ent.Driver(dialect.DebugWithContext(db.Driver(), tl.log))))
		n, err := pruner.PruneEvents(context.Background(), time.Now().Add(-core.DefaultEventRetention), 3)
		if err != nil || n != len(old) {
			t.Fatalf("pruned %d, %v; want %d", n, err, len(old))
		}
		deletes := 0
		for _, s := range tl.take() {
			if eventsDelete.MatchString(s) {
				deletes++
			}
		}
		if deletes != 3 {
			t.Fatalf("%d delete statements for %d events in batches of 3, want 3", deletes, len(old))
		}
		if got := f.storedVersions(t, true); !slices.Equal(got, all[len(old):]) {
			t.Fatalf("kept %v, want %v", got, all[len(old):])
		}
		if got := other.storedVersions(t, true); !slices.Equal(got, otherBefore) {
			t.Fatalf("another workspace's young events were pruned: %v, want %v", got, otherBefore)
		}
		ws, err := f.db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
		if err != nil || ws.EventsPrunedTo != horizon {
			t.Fatalf("events_pruned_to %d, %v; want %d", ws.EventsPrunedTo, err, horizon)
		}
		if ows, err := f.db.Client.Workspace.Get(sys(), other.boot.Workspace.ID); err != nil || ows.EventsPrunedTo != 0 {
			t.Fatalf("another workspace's horizon moved: %d, %v", ows.EventsPrunedTo, err)
		}

		// A replay from before the horizon is told it would have a hole;
		// one from the horizon on is served.
		if _, pruned, err := f.svc.EventsAfter(f.withKey, horizon-1, 100); err != nil || !pruned {
			t.Fatalf("EventsAfter(%d): pruned %v, %v", horizon-1, pruned, err)
		}
		evs, pruned, err := f.svc.EventsAfter(f.withKey, horizon, 100)
		if err != nil || pruned || !slices.Equal(versions(evs), all[len(old):]) {
			t.Fatalf("EventsAfter(%d): %v pruned %v, %v", horizon, versions(evs), pruned, err)
		}
		// So is the events list.
		before := horizon - 1
		_, err = f.svc.Events(f.withKey, core.EventFilter{After: &before}, core.EventOrder{OldestFirst: true}, core.Window{})
		wantInvalid(t, err, "afterVersion")
		l, err := f.svc.Events(f.withKey, core.EventFilter{After: &horizon}, core.EventOrder{OldestFirst: true}, core.Window{})
		if err != nil || !slices.Equal(versions(l.Items), all[len(old):]) {
			t.Fatalf("events after the horizon: %v, %v", l, err)
		}
		// Without a version the list starts at the oldest event kept, and
		// every total counts what is left.
		if l, err := f.svc.Events(f.withKey, core.EventFilter{}, core.EventOrder{}, core.Window{}); err != nil || l.Total != len(all)-len(old) {
			t.Fatalf("events after pruning: %v, %v", l, err)
		}
		history, err := f.svc.ProcedureHistory(f.withKey, p.ID.String(), core.Window{})
		if err != nil || history.Total >= historyBefore.Total || history.Total == 0 {
			t.Fatalf("history total %d after pruning, %d before (%v)", history.Total, historyBefore.Total, err)
		}
		// Nothing more is old: a second run deletes nothing.
		if n, err := f.svc.PruneEvents(context.Background(), time.Now().Add(-core.DefaultEventRetention), 3); err != nil || n != 0 {
			t.Fatalf("second run pruned %d, %v", n, err)
		}
	})
}

// TestEventsFollowTheRolesOfTheirRecords: the change log shows a role the
// events of the records that role may read, and no others. A token's events
// (its name, member and expiry) are shown to the roles the tokens list
// answers, whatever asks for them: the list, a kind or entity filter, an
// event by id; totals count what is shown. Members' events are shown to
// every role, as members (emails and roles) are.
func TestEventsFollowTheRolesOfTheirRecords(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "EVR")
		p := f.newProcedure(t, "visible", "TODO", f.project)
		f.touch(t, p, 2)
		revoked, _, err := f.svc.CreateToken(f.withKey, core.TokenInput{Name: "to revoke"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.RevokeToken(f.withKey, revoked.ID.String()); err != nil {
			t.Fatal(err)
		}
		stored := f.loggedEvents(t, 0)
		var tokenEvent *ent.Event
		tokenEvents := 0
		for _, e := range stored {
			if strings.HasPrefix(e.Kind, "token.") {
				tokenEvents++
				tokenEvent = e
			}
		}
		if tokenEvents < 3 {
			t.Fatalf("the test data holds %d token events", tokenEvents)
		}
		roles := map[viewer.Role]context.Context{viewer.RoleAdmin: f.withKey}
		for _, r := range []viewer.Role{viewer.RoleMember, viewer.RoleViewer} {
			roles[r], _ = f.as(t, r)
		}
		stored = f.loggedEvents(t, 0) // with the members just added
		for role, ctx := range roles {
			t.Run(string(role), func(t *testing.T) {
				// The rule to mirror: what the tokens list answers this role.
				_, err := f.svc.Tokens(ctx)
				readsTokens := err == nil
				if !readsTokens {
					wantCode(t, err, apperr.Forbidden)
				}
				var want []int64
				for i := len(stored) - 1; i >= 0; i-- {
					if readsTokens || !strings.HasPrefix(stored[i].Kind, "token.") {
						want = append(want, stored[i].Version)
					}
				}
				var got []int64
				var after *core.Cursor
				for {
					l, err := f.svc.Events(ctx, core.EventFilter{}, core.EventOrder{}, core.Window{First: page(4), After: after})
					if err != nil {
						t.Fatal(err)
					}
					if l.Total != len(want) {
						t.Fatalf("total %d, want %d", l.Total, len(want))
					}
					got = append(got, versions(l.Items)...)
					if !l.PageInfo.HasNextPage {
						break
					}
					c := l.Cursor(l.Items[len(l.Items)-1])
					after = &c
				}
				if !slices.Equal(got, want) {
					t.Fatalf("read %v, want %v", got, want)
				}

				tokenFilters := map[string]core.EventFilter{
					"kinds":  {Kinds: []string{"token.created", "token.revoked"}},
					"entity": {EntityID: revoked.ID.String()},
				}
				for name, filter := range tokenFilters {
					l, err := f.svc.Events(ctx, filter, core.EventOrder{}, core.Window{})
					if err != nil {
						t.Fatal(err)
					}
					if shown := l.Total > 0 || len(l.Items) > 0; shown != readsTokens {
						t.Fatalf("%s filter: %d token events shown (total %d), reads tokens: %v", name, len(l.Items), l.Total, readsTokens)
					}
					if len(l.Items) != l.Total {
						t.Fatalf("%s filter: %d events shown, total %d", name, len(l.Items), l.Total)
					}
				}
				e, err := f.svc.Event(ctx, tokenEvent.ID.String())
				if readsTokens {
					if err != nil || e.ID != tokenEvent.ID {
						t.Fatalf("a token event by id: %v, %v", e, err)
					}
				} else {
					wantCode(t, err, apperr.NotFound)
				}

				l, err := f.svc.Events(ctx, core.EventFilter{Kinds: []string{"member.added"}}, core.EventOrder{}, core.Window{})
				if err != nil || l.Total != 2 || len(l.Items) != 2 {
					t.Fatalf("members' events: %+v, %v", l, err)
				}
			})
		}
	})
}
