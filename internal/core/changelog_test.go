package core_test

// The change log (docs/api.md, "Events"): every write appends exactly one
// event, at the version it commits, naming what it wrote, who wrote it and
// the fields it changed (long texts as their size and hash); a write that
// fails appends nothing.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/viewer"
)

// productionService is the service as a server wires it for db: on
// PostgreSQL, field updates share the workspace's lock and log their event
// from their bump statement (sharedFinish), so that both ways of logging
// are tested.
func productionService(db *database.DB) *core.Service {
	opts := []core.Option{core.WithClock(func() time.Time { return clock })}
	if db.Dialect == "postgres" {
		opts = append(opts, core.WithAnnouncer(events.NewPostgresAnnouncer(nil)), core.WithLockPolicy(core.SharedFieldUpdates))
	}
	return core.New(db.Client, opts...)
}

// logFixture is a workspace whose admin writes through a token, as API
// requests do, so that events name both the member and the token.
type logFixture struct {
	*fixture
	token   *ent.Token
	withKey context.Context // the admin, through token
}

func newLogFixture(t *testing.T, db *database.DB, key string) *logFixture {
	t.Helper()
	f := setup(t, db, key)
	f.svc = productionService(db)
	tok, _, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: f.boot.Admin.ID.String(), Name: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := viewer.NewContext(context.Background(), &viewer.Viewer{
		WorkspaceID: f.boot.Workspace.ID, MemberID: f.boot.Admin.ID, TokenID: tok.ID, Role: viewer.RoleAdmin})
	return &logFixture{fixture: f, token: tok, withKey: ctx}
}

// loggedEvents are the workspace's events after version, oldest first, as
// stored.
func (f *fixture) loggedEvents(t *testing.T, after int64) []*ent.Event {
	t.Helper()
	evs, err := f.db.Client.Event.Query().Where(event.WorkspaceID(f.boot.Workspace.ID), event.VersionGT(after)).
		Order(event.ByVersion()).All(sys())
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// digest is the JSON a long text is logged as.
func digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return fmt.Sprintf(`{"size":%d,"sha256":"%s"}`, len(text), hex.EncodeToString(sum[:]))
}

// changesOf reads an event's changes as field → [before, after] JSON, in
// their order.
func changesOf(t *testing.T, e *ent.Event) ([]string, map[string][2]string) {
	t.Helper()
	var fc []core.FieldChange
	if err := json.Unmarshal([]byte(e.Changes), &fc); err != nil {
		t.Fatalf("changes %s: %v", e.Changes, err)
	}
	var fields []string
	out := map[string][2]string{}
	for _, c := range fc {
		fields = append(fields, c.Field)
		out[c.Field] = [2]string{compact(t, c.Before), compact(t, c.After)}
	}
	return fields, out
}

// compact is raw without insignificant space (PostgreSQL's jsonb shows
// {"size": 5}).
func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return b.String()
}

func TestEveryWriteLogsOneEvent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "LOG")
		ctx := f.withKey
		const content, edited = "SECRET step one", "SECRET step two, longer"
		var (
			project   *ent.Project
			category  *ent.Category
			proc      *ent.Procedure
			comment   *ent.Comment
			member    *ent.Member
			token     *ent.Token
			procID    = func() *uuid.UUID { return &proc.ID }
			projectID = func() *uuid.UUID { return &project.ID }
			none      = func() *uuid.UUID { return nil }
		)
		rows := []struct {
			name  string
			write func() (uuid.UUID, error)
			kind  core.EventKind
			// procedure and project are the ids the event must name.
			procedure, project func() *uuid.UUID
			// fields are the fields it must list, in order; changes some
			// of their values (before, after; "" is not checked).
			fields  []string
			changes map[string][2]string
			// operator: written as the operator's admin (no token).
			operator bool
		}{
			{"create a project", func() (uuid.UUID, error) {
				var err error
				project, err = f.svc.CreateProject(ctx, core.ProjectInput{Name: core.Some("Logged")})
				return project.ID, err
			}, core.EventProjectCreated, none, projectID, []string{"name"}, map[string][2]string{"name": {"null", `"Logged"`}}, false},
			{"create a category", func() (uuid.UUID, error) {
				var err error
				category, err = f.svc.CreateCategory(ctx, "Runbooks")
				return category.ID, err
			}, core.EventCategoryCreated, none, none, []string{"name"}, map[string][2]string{"name": {"null", `"Runbooks"`}}, false},
			{"create a procedure", func() (uuid.UUID, error) {
				in := f.input("Rotate keys", "TODO", project)
				in.Content, in.CategoryID = content, category.ID.String()
				var err error
				proc, err = f.svc.CreateProcedure(ctx, in)
				return proc.ID, err
			}, core.EventProcedureCreated, procID, projectID,
				[]string{"name", "content", "state", "priority", "projectId", "categoryId", "doerId", "dueAt", "position", "displayVideo", "isFineTunedData"},
				map[string][2]string{"name": {"null", `"Rotate keys"`}, "content": {"null", digest(content)}, "state": {"null", `"TODO"`},
					"dueAt": {"null", `"2026-06-01T12:00:00.000Z"`}}, false},
			{"update a procedure's fields", func() (uuid.UUID, error) {
				_, err := f.svc.UpdateProcedure(ctx, proc.ShortID, core.UpdateProcedureInput{Name: core.Some("Rotate all keys"),
					Content: core.Some(edited), Priority: core.Some("HIGH")})
				return proc.ID, err
			}, core.EventProcedureUpdated, procID, projectID, []string{"name", "content", "priority"},
				map[string][2]string{"name": {`"Rotate keys"`, `"Rotate all keys"`}, "content": {digest(content), digest(edited)},
					"priority": {`"MEDIUM"`, `"HIGH"`}}, false},
			{"move a procedure", func() (uuid.UUID, error) {
				_, err := f.svc.MoveProcedure(ctx, proc.ID.String(), strp("IN_PROGRESS"), nil, nil)
				return proc.ID, err
			}, core.EventProcedureMoved, procID, projectID, []string{"state"},
				map[string][2]string{"state": {`"TODO"`, `"IN_PROGRESS"`}}, false},
			{"comment", func() (uuid.UUID, error) {
				var err error
				comment, err = f.svc.AddComment(ctx, proc.ShortID, "SECRET comment")
				return comment.ID, err
			}, core.EventCommentCreated, procID, projectID, []string{"text"}, map[string][2]string{"text": {"null", digest("SECRET comment")}}, false},
			{"edit a comment", func() (uuid.UUID, error) {
				_, err := f.svc.UpdateComment(ctx, comment.ID.String(), "SECRET comment, edited")
				return comment.ID, err
			}, core.EventCommentUpdated, procID, none, []string{"text"},
				map[string][2]string{"text": {digest("SECRET comment"), digest("SECRET comment, edited")}}, false},
			{"delete a comment", func() (uuid.UUID, error) {
				return comment.ID, f.svc.DeleteComment(ctx, comment.ID.String())
			}, core.EventCommentDeleted, procID, none, []string{"text"}, map[string][2]string{"text": {digest("SECRET comment, edited"), "null"}}, false},
			{"rename a project", func() (uuid.UUID, error) {
				_, err := f.svc.UpdateProject(ctx, project.ID.String(), core.ProjectInput{Name: core.Some("Logged, renamed")})
				return project.ID, err
			}, core.EventProjectUpdated, none, projectID, []string{"name"}, map[string][2]string{"name": {`"Logged"`, `"Logged, renamed"`}}, false},
			{"rename a category", func() (uuid.UUID, error) {
				_, err := f.svc.UpdateCategory(ctx, category.ID.String(), core.Some("Playbooks"))
				return category.ID, err
			}, core.EventCategoryUpdated, none, none, []string{"name"}, map[string][2]string{"name": {`"Runbooks"`, `"Playbooks"`}}, false},
			{"add a member", func() (uuid.UUID, error) {
				var err error
				member, err = f.svc.AddMember(ctx, core.MemberInput{Name: core.Some("Ola"), Email: core.Some("ola@log.example"), Role: core.Some("MEMBER")})
				return member.ID, err
			}, core.EventMemberAdded, none, none, []string{"name", "email", "role"},
				map[string][2]string{"email": {"null", `"ola@log.example"`}, "role": {"null", `"MEMBER"`}}, false},
			{"change a member's role", func() (uuid.UUID, error) {
				_, err := f.svc.UpdateMember(ctx, member.ID.String(), core.MemberInput{Role: core.Some("VIEWER")})
				return member.ID, err
			}, core.EventMemberUpdated, none, none, []string{"role"}, map[string][2]string{"role": {`"MEMBER"`, `"VIEWER"`}}, false},
			{"create a token", func() (uuid.UUID, error) {
				var err error
				token, _, err = f.svc.CreateToken(ctx, core.TokenInput{MemberID: member.ID.String(), Name: "ci"})
				return token.ID, err
			}, core.EventTokenCreated, none, none, []string{"name", "memberId"},
				map[string][2]string{"name": {"null", `"ci"`}, "memberId": {"null", ""}}, false},
			{"revoke a token", func() (uuid.UUID, error) {
				_, err := f.svc.RevokeToken(ctx, token.ID.String())
				return token.ID, err
			}, core.EventTokenRevoked, none, none, []string{"revokedAt"}, map[string][2]string{"revokedAt": {"null", ""}}, false},
			// Unlinking shows no field: who was linked is not shown.
			{"unlink a member from its person", func() (uuid.UUID, error) {
				linkTo(t, f.db, member, "https://idp.log.example", "u-ola")
				_, err := f.svc.UnlinkMember(ctx, member.ID.String())
				return member.ID, err
			}, core.EventMemberUnlinked, none, none, nil, nil, false},
			{"let the person unlinked link again", func() (uuid.UUID, error) {
				_, err := f.svc.AllowMemberLink(ctx, member.ID.String())
				return member.ID, err
			}, core.EventMemberLinkAllowed, none, none, nil, nil, false},
			{"remove a member", func() (uuid.UUID, error) {
				_, err := f.svc.RemoveMember(ctx, member.ID.String())
				return member.ID, err
			}, core.EventMemberRemoved, none, none, []string{"name", "email", "role"},
				map[string][2]string{"role": {`"VIEWER"`, "null"}}, false},
			{"delete a procedure (as the operator)", func() (uuid.UUID, error) {
				return proc.ID, f.svc.DeleteProcedure(f.admin, proc.ShortID)
			}, core.EventProcedureDeleted, procID, projectID,
				[]string{"name", "content", "state", "priority", "projectId", "categoryId", "doerId", "dueAt", "position", "displayVideo", "isFineTunedData"},
				map[string][2]string{"name": {`"Rotate all keys"`, "null"}, "content": {digest(edited), "null"}}, true},
			// Deletes of projects and categories log no field values
			// (docs/api.md: reading them would cost the write a statement).
			{"delete a category", func() (uuid.UUID, error) {
				return category.ID, f.svc.DeleteCategory(ctx, category.ID.String())
			}, core.EventCategoryDeleted, none, none, nil, nil, false},
			{"delete a project", func() (uuid.UUID, error) {
				return project.ID, f.svc.DeleteProject(ctx, project.ID.String())
			}, core.EventProjectDeleted, none, projectID, nil, nil, false},
		}
		seen := map[core.EventKind]bool{}
		for _, row := range rows {
			before := f.version(t)
			entity, err := row.write()
			if err != nil {
				t.Fatalf("%s: %v", row.name, err)
			}
			after := f.version(t)
			evs := f.loggedEvents(t, before)
			if len(evs) != 1 {
				t.Fatalf("%s appended %d events, want 1", row.name, len(evs))
			}
			e := evs[0]
			if e.Version != after || after <= before {
				t.Errorf("%s: event at version %d; the write moved the workspace from %d to %d", row.name, e.Version, before, after)
			}
			if core.EventKind(e.Kind) != row.kind || e.EntityID != entity {
				t.Errorf("%s: logged %s of %s, want %s of %s", row.name, e.Kind, e.EntityID, row.kind, entity)
			}
			if got, want := fmt.Sprint(e.ProcedureID), fmt.Sprint(row.procedure()); got != want {
				t.Errorf("%s: procedureId %s, want %s", row.name, got, want)
			}
			if got, want := fmt.Sprint(e.ProjectID), fmt.Sprint(row.project()); got != want {
				t.Errorf("%s: projectId %s, want %s", row.name, got, want)
			}
			wantToken := &f.token.ID
			if row.operator {
				wantToken = nil
			}
			if e.ActorMemberID == nil || *e.ActorMemberID != f.boot.Admin.ID || fmt.Sprint(e.ActorTokenID) != fmt.Sprint(wantToken) {
				t.Errorf("%s: actor %v with token %v, want %s with %v", row.name, e.ActorMemberID, e.ActorTokenID, f.boot.Admin.ID, wantToken)
			}
			fields, changes := changesOf(t, e)
			if fmt.Sprint(fields) != fmt.Sprint(row.fields) {
				t.Errorf("%s: changed %v, want %v", row.name, fields, row.fields)
			}
			for field, want := range row.changes {
				got := changes[field]
				if got[0] != want[0] || want[1] != "" && got[1] != want[1] {
					t.Errorf("%s: %s changed %s → %s, want %s → %s", row.name, field, got[0], got[1], want[0], want[1])
				}
			}
			if strings.Contains(e.Changes, "SECRET") {
				t.Errorf("%s: the log holds a text itself: %s", row.name, e.Changes)
			}
			// The API's shape of the same row.
			shown, err := core.EventOf(e)
			if err != nil || shown.Type != row.kind || shown.Version != e.Version || shown.Entity.ID != entity.String() ||
				shown.Entity.Type != row.kind.EntityType() || len(shown.Changes) != len(fields) {
				t.Errorf("%s: EventOf = %+v, %v", row.name, shown, err)
			}
			seen[row.kind] = true
		}
		for _, k := range core.EventKinds {
			if !seen[k] {
				t.Errorf("no write of kind %s was tested", k)
			}
		}
	})
}

// TestFailedWritesLogNothing: a write refused before its transaction, or
// rolled back inside it, appends no event and leaves the version alone.
func TestFailedWritesLogNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "NOLOG")
		ctx := f.withKey
		p := f.newProcedure(t, "kept", "TODO", f.project)
		viewerCtx, _ := f.as(t, viewer.RoleViewer)
		stale := p.UpdatedAt.Add(-time.Hour)
		rows := []struct {
			name  string
			code  apperr.Code
			write func() error
		}{
			{"an invalid update", apperr.ValidationFailed, func() error {
				_, err := f.svc.UpdateProcedure(ctx, p.ShortID, core.UpdateProcedureInput{Name: core.Some("")})
				return err
			}},
			{"a field update on a stale precondition", apperr.PreconditionFailed, func() error {
				_, err := f.svc.UpdateProcedure(ctx, p.ShortID, core.UpdateProcedureInput{Priority: core.Some("HIGH")}, core.IfUpdatedAt(stale))
				return err
			}},
			{"a move to an unknown state", apperr.ValidationFailed, func() error {
				_, err := f.svc.MoveProcedure(ctx, p.ShortID, strp("DONE"), nil, nil)
				return err
			}},
			{"a delete on a stale precondition", apperr.PreconditionFailed, func() error {
				return f.svc.DeleteProcedure(ctx, p.ShortID, core.IfUpdatedAt(stale))
			}},
			{"deleting a project that has procedures", apperr.Conflict, func() error {
				return f.svc.DeleteProject(ctx, f.project.ID.String())
			}},
			{"a duplicate member", apperr.Conflict, func() error {
				_, err := f.svc.AddMember(ctx, core.MemberInput{Name: core.Some("Twin"), Email: core.Some(f.boot.Admin.Email), Role: core.Some("MEMBER")})
				return err
			}},
			{"demoting the last admin", apperr.Conflict, func() error {
				_, err := f.svc.UpdateMember(ctx, f.boot.Admin.ID.String(), core.MemberInput{Role: core.Some("MEMBER")})
				return err
			}},
			{"a comment by a viewer", apperr.Forbidden, func() error {
				_, err := f.svc.AddComment(viewerCtx, p.ShortID, "no")
				return err
			}},
			{"a comment on an unknown procedure", apperr.NotFound, func() error {
				_, err := f.svc.AddComment(ctx, "NOLOG-999", "no")
				return err
			}},
		}
		for _, row := range rows {
			before, logged := f.version(t), len(f.loggedEvents(t, 0))
			wantCode(t, row.write(), row.code)
			if v, n := f.version(t), len(f.loggedEvents(t, 0)); v != before || n != logged {
				t.Errorf("%s: version %d → %d, events %d → %d; want neither to move", row.name, before, v, logged, n)
			}
		}
		// The procedure is still as it was.
		got, err := f.db.Client.Procedure.Query().Where(procedure.ID(p.ID)).Only(sys())
		if err != nil || got.Priority != p.Priority {
			t.Fatalf("the refused writes changed the procedure: %+v, %v", got, err)
		}
	})
}

// TestMaxFieldChanges: no event lists more fields than
// core.MaxFieldChanges, which GraphQL's complexity prices a list of
// changes at: a procedure's create lists every logged field.
func TestMaxFieldChanges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "MAXF")
		before := f.version(t)
		in := f.input("every field", "TODO", f.project)
		in.Content, in.CaptureID, in.DisplayVideo, in.IsFineTunedData = "text", strp("cap"), new(bool), new(bool)
		*in.DisplayVideo, *in.IsFineTunedData = true, true
		if _, err := f.svc.CreateProcedure(f.withKey, in); err != nil {
			t.Fatal(err)
		}
		evs := f.loggedEvents(t, before)
		if len(evs) != 1 {
			t.Fatalf("%d events", len(evs))
		}
		if fields, _ := changesOf(t, evs[0]); len(fields) != core.MaxFieldChanges {
			t.Fatalf("a create with every field lists %d fields (%v); core.MaxFieldChanges is %d", len(fields), fields, core.MaxFieldChanges)
		}
	})
}
