package core_test

// The write path under the workspace lock: how many statements each write
// runs inside its transaction (each one a round trip made while the lock is
// held, see inTx), that what an update returns is exactly what it stored,
// and BenchmarkUpdateProcedure, the latency of one update.

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/viewer"
)

// txLog collects the statements sent inside transactions.
type txLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *txLog) log(_ context.Context, v ...any) {
	s := fmt.Sprint(v...)
	if !strings.Contains(s, ").Exec: ") && !strings.Contains(s, ").Query: ") {
		return
	}
	if i := strings.Index(s, "query="); i >= 0 {
		s = s[i+len("query="):]
	}
	l.mu.Lock()
	l.stmts = append(l.stmts, s)
	l.mu.Unlock()
}

// take returns the statements logged since the last take.
func (l *txLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}

// traced is setup whose Service sends its statements through a logging
// driver (on top of the database's counting one).
func traced(t *testing.T, db *database.DB, key string) (*fixture, *txLog) {
	t.Helper()
	f := setup(t, db, key)
	l := &txLog{}
	client := ent.NewClient(ent.Driver(dialect.DebugWithContext(db.Driver(), l.log)))
	f.svc = core.New(client, core.WithClock(func() time.Time { return clock }))
	return f, l
}

// counted runs write and returns the statements it sent inside its
// transaction, failing the test when it fails.
func counted(t *testing.T, l *txLog, write func() error) []string {
	t.Helper()
	l.take()
	if err := write(); err != nil {
		t.Fatal(err)
	}
	return l.take()
}

// short is a statement's first words, for a readable failure.
func short(stmts []string) string {
	var b strings.Builder
	for _, s := range stmts {
		if len(s) > 90 {
			s = s[:90] + "…"
		}
		b.WriteString("\n\t" + s)
	}
	return b.String()
}

// versionBump matches the statement that bumps a workspace's version, in
// either dialect's quoting.
var versionBump = regexp.MustCompile("^(WITH \"workspace_lock\" AS MATERIALIZED \\(SELECT pg_advisory_xact_lock\\(\\$1\\)\\) )?UPDATE [`\"]workspaces[`\"] SET .*[`\"]version[`\"] = ")

// TestWriteStatementCounts pins how many statements each procedure and
// comment write runs inside its transaction: the version bump that takes
// the workspace's lock, then the write's own, the last of which appends the
// write's event to the change log (changelog.go; the service here has no announcer;
// PostgreSQL's adds one statement to each, and makes field updates share
// the lock: TestFieldUpdateStatementsOnPostgres). A new statement on these
// paths costs every writer of the workspace a round trip: it must be a
// deliberate change of these numbers.
func TestWriteStatementCounts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f, l := traced(t, db, "STMT")
		svc := f.svc
		p := f.newProcedure(t, "counted", "TODO", f.project)
		other := f.newProcedure(t, "other", "TODO", f.project)
		var c *ent.Comment
		writes := []struct {
			name  string
			want  int
			write func() error
		}{
			{"CreateProcedure", 9, func() error {
				_, err := svc.CreateProcedure(f.admin, f.input("new", "TODO", f.project))
				return err
			}},
			{"UpdateProcedure priority", 5, func() error {
				_, err := svc.UpdateProcedure(f.admin, p.ShortID, core.UpdateProcedureInput{Priority: core.Some("HIGH")})
				return err
			}},
			{"UpdateProcedure state", 6, func() error {
				_, err := svc.UpdateProcedure(f.admin, p.ShortID, core.UpdateProcedureInput{State: core.Some("IN_PROGRESS")})
				return err
			}},
			{"MoveProcedure", 6, func() error {
				_, err := svc.MoveProcedure(f.admin, p.ID.String(), strp("TODO"), nil, nil)
				return err
			}},
			// No count of the procedure's comments: a procedure holds any
			// number, and the database keeps their count (triggers).
			{"AddComment", 4, func() error {
				var err error
				c, err = svc.AddComment(f.admin, p.ID.String(), "hello")
				return err
			}},
			{"UpdateComment", 4, func() error {
				_, err := svc.UpdateComment(f.admin, c.ID.String(), "edited")
				return err
			}},
			{"DeleteComment", 4, func() error { return svc.DeleteComment(f.admin, c.ID.String()) }},
			{"DeleteProcedure", 6, func() error { return svc.DeleteProcedure(f.admin, other.ID.String()) }},
		}
		for _, w := range writes {
			stmts := counted(t, l, w.write)
			t.Logf("%s: %d statements in the transaction:%s", w.name, len(stmts), short(stmts))
			if len(stmts) != w.want {
				t.Errorf("%s ran %d statements in its transaction; want %d:%s", w.name, len(stmts), w.want, short(stmts))
			}
			for i, stmt := range stmts {
				if bump := versionBump.MatchString(stmt); bump != (i == 0) {
					t.Errorf("%s: statement %d %s the version bump; want the bump first, with the lock:%s", w.name, i, map[bool]string{true: "is", false: "is not"}[bump], short(stmts))
				}
			}
		}
	})
}

// TestActingCheckedBeforeNotFound: the writes that read the acting member
// together with their procedure answer disconnected or forbidden before
// not_found when there is no procedure to carry the member's role, as they
// did when the two were read apart.
func TestActingCheckedBeforeNotFound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "GONE")
		svc := f.svc
		p := f.newProcedure(t, "present", "TODO", f.project)
		writes := map[string]func(ctx context.Context, id string) error{
			"UpdateProcedure": func(ctx context.Context, id string) error {
				_, err := svc.UpdateProcedure(ctx, id, core.UpdateProcedureInput{Priority: core.Some("HIGH")})
				return err
			},
			"MoveProcedure": func(ctx context.Context, id string) error {
				_, err := svc.MoveProcedure(ctx, id, nil, nil, nil)
				return err
			},
			"DeleteProcedure": func(ctx context.Context, id string) error { return svc.DeleteProcedure(ctx, id) },
			"AddComment": func(ctx context.Context, id string) error {
				_, err := svc.AddComment(ctx, id, "hello")
				return err
			},
		}
		removed, m := f.as(t, viewer.RoleMember)
		if _, err := svc.RemoveMember(f.admin, m.ID.String()); err != nil {
			t.Fatal(err)
		}
		demoted, d := f.as(t, viewer.RoleMember)
		if _, err := svc.UpdateMember(f.admin, d.ID.String(), core.MemberInput{Role: core.Some("VIEWER")}); err != nil {
			t.Fatal(err)
		}
		for name, w := range writes {
			for _, id := range []string{"GONE-999", p.ShortID} {
				wantCode(t, w(removed, id), apperr.Disconnected)
				wantCode(t, w(demoted, id), apperr.Forbidden)
			}
			wantCode(t, w(f.admin, "GONE-999"), apperr.NotFound)
			t.Logf("%s: answers disconnected, forbidden, not_found in that order", name)
		}
	})
}

// TestUpdateReturnsWhatItStored: what UpdateProcedure returns is the row
// as stored, field for field, whatever the patch sets, clears or moves.
func TestUpdateReturnsWhatItStored(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "EXACT")
		other := f.newProject(t, "Other project")
		p := f.newProcedure(t, "exact", "TODO", f.project)
		f.newProcedure(t, "ahead", "WAITING", other)
		due := time.Date(2027, 3, 4, 5, 6, 7, 999_999_999, time.FixedZone("X", 3600))
		patches := []core.UpdateProcedureInput{
			{Priority: core.Some("HIGH")},
			{Name: core.Some("  renamed  "), Content: core.Some("some content"), CaptureID: core.Some("cap"),
				DisplayVideo: core.Some(true), IsFineTunedData: core.Some(true), DueAt: core.Some(due)},
			{State: core.Some("WAITING"), ProjectID: core.Some(other.ID.String())},
			{Content: core.Null[string](), CategoryID: core.Null[string](), DoerID: core.Null[string](), CaptureID: core.Null[string]()},
			{Position: core.Some(math.Pi), CategoryID: core.Some(f.category.ID.String()), DoerID: core.Some(f.boot.Admin.ID.String())},
			{State: core.Some("TODO")},
		}
		for i, in := range patches {
			got, err := f.svc.UpdateProcedure(f.admin, p.ID.String(), in)
			if err != nil {
				t.Fatalf("patch %d: %v", i, err)
			}
			stored, err := f.db.Client.Procedure.Get(sys(), p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := procedureDiff(got, stored); diff != "" {
				t.Fatalf("patch %d returned a row that differs from the stored one: %s", i, diff)
			}
		}
		moved, err := f.svc.MoveProcedure(f.admin, p.ID.String(), strp("COMPLETED"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if stored, err := f.db.Client.Procedure.Get(sys(), p.ID); err != nil {
			t.Fatal(err)
		} else if diff := procedureDiff(moved, stored); diff != "" {
			t.Fatalf("MoveProcedure returned a row that differs from the stored one: %s", diff)
		}
		c, err := f.svc.AddComment(f.admin, p.ID.String(), "first")
		if err != nil {
			t.Fatal(err)
		}
		edited, err := f.svc.UpdateComment(f.admin, c.ID.String(), "  edited  ")
		if err != nil {
			t.Fatal(err)
		}
		stored, err := f.db.Client.Comment.Get(sys(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if edited.ID != stored.ID || edited.Text != stored.Text || !edited.UpdatedAt.Equal(stored.UpdatedAt) ||
			!edited.CreatedAt.Equal(stored.CreatedAt) || edited.ProcedureID != stored.ProcedureID ||
			edited.AuthorID != stored.AuthorID || edited.WorkspaceID != stored.WorkspaceID {
			t.Fatalf("UpdateComment returned %+v; stored %+v", edited, stored)
		}
	})
}

// procedureDiff names the fields where a and b differ (times compared as
// instants).
func procedureDiff(a, b *ent.Procedure) string {
	var d []string
	check := func(field string, same bool, x, y any) {
		if !same {
			d = append(d, fmt.Sprintf("%s: %v != %v", field, x, y))
		}
	}
	eqp := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	deref := func(x any) any {
		switch v := x.(type) {
		case *string:
			if v != nil {
				return *v
			}
		case interface{ String() string }:
			return v.String()
		}
		return x
	}
	check("id", a.ID == b.ID, a.ID, b.ID)
	check("workspaceId", a.WorkspaceID == b.WorkspaceID, a.WorkspaceID, b.WorkspaceID)
	check("createdAt", a.CreatedAt.Equal(b.CreatedAt), a.CreatedAt, b.CreatedAt)
	check("updatedAt", a.UpdatedAt.Equal(b.UpdatedAt), a.UpdatedAt, b.UpdatedAt)
	check("number", a.Number == b.Number, a.Number, b.Number)
	check("shortId", a.ShortID == b.ShortID, a.ShortID, b.ShortID)
	check("name", a.Name == b.Name, a.Name, b.Name)
	check("priority", a.Priority == b.Priority, a.Priority, b.Priority)
	check("state", a.State == b.State, a.State, b.State)
	check("content", eqp(a.Content, b.Content), deref(a.Content), deref(b.Content))
	check("categoryId", (a.CategoryID == nil) == (b.CategoryID == nil) && (a.CategoryID == nil || *a.CategoryID == *b.CategoryID), a.CategoryID, b.CategoryID)
	check("doerId", (a.DoerID == nil) == (b.DoerID == nil) && (a.DoerID == nil || *a.DoerID == *b.DoerID), a.DoerID, b.DoerID)
	check("creatorId", a.CreatorID == b.CreatorID, a.CreatorID, b.CreatorID)
	check("projectId", a.ProjectID == b.ProjectID, a.ProjectID, b.ProjectID)
	check("projectName", a.ProjectName == b.ProjectName, a.ProjectName, b.ProjectName)
	check("position", a.Position == b.Position, a.Position, b.Position)
	check("dueAt", a.DueAt.Equal(b.DueAt), a.DueAt, b.DueAt)
	check("captureId", eqp(a.CaptureID, b.CaptureID), deref(a.CaptureID), deref(b.CaptureID))
	check("displayVideo", a.DisplayVideo == b.DisplayVideo, a.DisplayVideo, b.DisplayVideo)
	check("isFineTunedData", a.IsFineTunedData == b.IsFineTunedData, a.IsFineTunedData, b.IsFineTunedData)
	return strings.Join(d, "; ")
}

// benchWorkspace opens a database of dialect d with a workspace and a
// project, and returns the service, a context acting as its admin, the
// bootstrap and the project.
func benchWorkspace(b *testing.B, d string) (*core.Service, context.Context, *core.Bootstrapped, *ent.Project) {
	b.Helper()
	db := dbtest.Open(b, d)
	// Announced as the server announces (internal/server.Announcer): on
	// PostgreSQL a write's notification is one of its statements.
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
	return svc, admin, boot, proj
}

// BenchmarkUpdateProcedure is one PUT /procedures/{shortId} changing the
// priority, as the load tool's writes do, on each database.
func BenchmarkUpdateProcedure(b *testing.B) {
	for _, d := range dbtest.Dialects(b) {
		b.Run(d, func(b *testing.B) {
			svc, admin, boot, proj := benchWorkspace(b, d)
			cat, err := svc.CreateCategory(admin, "C")
			if err != nil {
				b.Fatal(err)
			}
			due := dueAt
			p, err := svc.CreateProcedure(admin, core.CreateProcedureInput{Name: "bench", Priority: "LOW", State: "TODO", DueAt: &due,
				CategoryID: cat.ID.String(), DoerID: boot.Admin.ID.String(), ProjectID: proj.ID.String()})
			if err != nil {
				b.Fatal(err)
			}
			priorities := []string{"LOW", "MEDIUM", "HIGH"}
			for i := 0; b.Loop(); i++ {
				if _, err := svc.UpdateProcedure(admin, p.ShortID, core.UpdateProcedureInput{Priority: core.Some(priorities[i%3])}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpdateProcedureContended is concurrent priority updates of
// distinct procedures of one workspace (16 writers on a 2-core machine):
// they queue on the workspace lock, so ns/op approaches the time one
// update holds it.
func BenchmarkUpdateProcedureContended(b *testing.B) {
	for _, d := range dbtest.Dialects(b) {
		b.Run(d, func(b *testing.B) {
			svc, admin, boot, proj := benchWorkspace(b, d)
			due := dueAt
			const writers = 64
			var ids []string
			for i := range writers {
				p, err := svc.CreateProcedure(admin, core.CreateProcedureInput{Name: fmt.Sprint("bench ", i), Priority: "LOW", State: "TODO",
					DueAt: &due, DoerID: boot.Admin.ID.String(), CategoryID: mustCategory(b, svc, admin), ProjectID: proj.ID.String()})
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, p.ShortID)
			}
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				id := ids[next.Add(1)%writers]
				priorities := []string{"LOW", "MEDIUM", "HIGH"}
				for i := 0; pb.Next(); i++ {
					if _, err := svc.UpdateProcedure(admin, id, core.UpdateProcedureInput{Priority: core.Some(priorities[i%3])}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func mustCategory(b *testing.B, svc *core.Service, admin context.Context) string {
	b.Helper()
	c, err := svc.CreateCategory(admin, uuid.NewString())
	if err != nil {
		b.Fatal(err)
	}
	return c.ID.String()
}
