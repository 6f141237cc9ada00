package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// deliveryBound is how soon a committed change must reach every replica's
// subscribers: the latency live updates promise.
const deliveryBound = time.Second

// instance is one replica: a hub fed by its own Listener.
type instance struct {
	hub  *Hub
	lis  *Listener
	name string // the listener session's application_name
}

// pgEnv is a fresh PostgreSQL database with a service announcing through
// pg_notify and two instances listening to it.
type pgEnv struct {
	url  string
	db   *database.DB
	ann  *failAfter
	a, b *instance
}

func newPGEnv(t *testing.T) *pgEnv {
	t.Helper()
	dbtest.NeedPostgres(t)
	ctx := context.Background()
	url := dbtest.CreatePostgres(t)
	db, err := database.Open(ctx, url, database.Options{Prepare: true,
		StatementTimeout: 30 * time.Second, IdleInTransactionTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	env := &pgEnv{url: url, db: db, ann: &failAfter{Announcer: NewPostgresAnnouncer(nil)}}
	env.a, env.b = env.listen(t, "instance_a", nil), env.listen(t, "instance_b", nil)
	return env
}

// listen starts an instance whose listener's session is named name. The
// URL carries the pool's session timeouts, as the server's does.
func (env *pgEnv) listen(t *testing.T, name string, log *slog.Logger) *instance {
	t.Helper()
	h := NewHub(HubOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Listen(ctx, env.url+"&statement_timeout=1&idle_in_transaction_session_timeout=1&application_name="+name, h, log)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Listener.Close: %v", err)
		}
		h.Close()
	})
	return &instance{hub: h, lis: l, name: name}
}

func (env *pgEnv) service() *core.Service {
	return core.New(env.db.Client, core.WithAnnouncer(statementFailAfter{env.ann}), core.WithLockPolicy(core.SharedFieldUpdates))
}

// TestPostgresTwoInstances writes through one service and checks that both
// instances' subscribers hear every committed change, promptly, with what
// it changed and the workspace's version as of it, and that another
// workspace's subscribers hear nothing of it.
func TestPostgresTwoInstances(t *testing.T) {
	t.Parallel()
	env := newPGEnv(t)
	svc := env.service()
	f := setup(t, env.db, svc, "TWO")
	outsider := setup(t, env.db, svc, "OUT")
	subs := []*Subscription{env.a.hub.Subscribe(f.ws), env.b.hub.Subscribe(f.ws)}
	outside := env.a.hub.Subscribe(outsider.ws)

	p := f.create(t, "Shared")
	steps := []struct {
		name   string
		write  func() error
		kind   core.ChangeKind
		before *core.Facets
		after  *core.Facets
	}{
		{"UpdateProcedure", func() error {
			_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{ProjectID: core.Some(f.other.ID.String())})
			return err
		}, core.ProcedureUpdated, col(f.project, "TODO"), col(f.other, "TODO")},
		{"MoveProcedure", func() error {
			_, err := svc.MoveProcedure(f.admin, p.ID.String(), strp("WAITING"), nil, nil)
			return err
		}, core.ProcedureMoved, col(f.other, "TODO"), col(f.other, "WAITING")},
		// A field update announces from its version bump's statement.
		{"UpdateProcedure fields", func() error {
			_, err := svc.UpdateProcedure(f.admin, p.ID.String(), core.UpdateProcedureInput{Priority: core.Some("HIGH"), Name: core.Some("Renamed")})
			return err
		}, core.ProcedureUpdated, col(f.other, "WAITING"), col(f.other, "WAITING")},
		{"AddComment", func() error {
			_, err := svc.AddComment(f.admin, p.ID.String(), "seen from both")
			return err
		}, core.ProcedureCommented, nil, col(f.other, "WAITING")},
		{"DeleteProcedure", func() error { return svc.DeleteProcedure(f.admin, p.ID.String()) },
			core.ProcedureDeleted, col(f.other, "WAITING"), nil},
	}
	for _, s := range subs {
		e := receive(t, s, deliveryBound)
		if e.Kind != core.ProcedureCreated || e.ProcedureID != p.ID || !reflect.DeepEqual(columnsOf(e).After, col(f.project, "TODO")) {
			t.Fatalf("first event = %s; want the creation", show(e))
		}
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.write(); err != nil {
				t.Fatal(err)
			}
			want := Notification{Change: core.Change{WorkspaceID: f.ws, Kind: st.kind, ProcedureID: p.ID, Before: st.before, After: st.after},
				Version: f.version(t)}
			for i, s := range subs {
				if e := columnsOf(receive(t, s, deliveryBound)); !reflect.DeepEqual(e, want) {
					t.Fatalf("instance %d got %s; want %s", i, show(e), show(want))
				}
			}
		})
	}
	// Notifications arrive in commit order: if any of the writes above had
	// reached the outsider, it would come before this one.
	q := outsider.create(t, "Elsewhere")
	if e := receive(t, outside, deliveryBound); e.WorkspaceID != outsider.ws || e.ProcedureID != q.ID {
		t.Fatalf("the other workspace's subscriber got %s first", show(e))
	}
}

// TestPostgresRollback checks that a write that fails delivers nothing,
// including one whose pg_notify ran before its transaction rolled back.
func TestPostgresRollback(t *testing.T) {
	t.Parallel()
	env := newPGEnv(t)
	svc := env.service()
	f := setup(t, env.db, svc, "RBK")
	subs := []*Subscription{env.a.hub.Subscribe(f.ws), env.b.hub.Subscribe(f.ws)}
	p := f.create(t, "Stays")
	for _, s := range subs {
		receive(t, s, deliveryBound) // the creation
	}

	failures := []struct {
		name  string
		write func() error
		code  apperr.Code
	}{
		{"PreconditionFailed", func() error {
			return svc.DeleteProcedure(f.admin, p.ID.String(), core.IfUpdatedAt(p.UpdatedAt.Add(-time.Hour)))
		}, apperr.PreconditionFailed},
		{"FailedAfterAnnouncing", func() error {
			env.ann.fail.Store(true)
			defer env.ann.fail.Store(false)
			_, err := svc.MoveProcedure(f.admin, p.ID.String(), strp("COMPLETED"), nil, nil)
			return err
		}, apperr.Internal},
	}
	for _, tt := range failures {
		if err := tt.write(); apperr.CodeOf(err) != tt.code {
			t.Fatalf("%s: err = %v; want %s", tt.name, err, tt.code)
		}
	}
	// Notifications arrive in commit order: a rolled-back write's would
	// come before this comment's.
	if _, err := svc.AddComment(f.admin, p.ID.String(), "after the failures"); err != nil {
		t.Fatal(err)
	}
	for i, s := range subs {
		if e := receive(t, s, deliveryBound); e.Kind != core.ProcedureCommented || e.Version != f.version(t) {
			t.Fatalf("instance %d got %s; want the comment at version %d", i, show(e), f.version(t))
		}
	}
}

// TestDecode checks the payload's round trip and what decode refuses.
func TestDecode(t *testing.T) {
	ws, proc, proj, cat, doer := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	full := core.Change{WorkspaceID: ws, Kind: core.ProcedureMoved, ProcedureID: proc,
		Before: &core.Facets{ProjectID: proj, State: procedure.StateIN_PROGRESS, Priority: procedure.PriorityHIGH,
			CategoryID: &cat, DueAt: time.Date(2026, 11, 25, 9, 30, 0, 123456000, time.UTC)},
		After: &core.Facets{ProjectID: proj, State: procedure.StateCOMPLETED, Priority: procedure.PriorityLOW,
			DoerID: &doer, DueAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		Reworded: true, Renamed: true}
	// notified is what the statement sends: the payload and the version.
	notified := func(c core.Change, v int64) string {
		p := payloadOf(c)
		p.Version = v
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if n := len(notified(full, math.MaxInt64)); n > 1000 {
		t.Fatalf("the largest payload is %d bytes; PostgreSQL's limit is 8000", n)
	}
	valid := []struct {
		name   string
		change core.Change
	}{
		{"Moved", full},
		{"Created", core.Change{WorkspaceID: ws, Kind: core.ProcedureCreated, ProcedureID: proc, After: full.After}},
		{"Deleted", core.Change{WorkspaceID: ws, Kind: core.ProcedureDeleted, ProcedureID: proc, Before: full.Before}},
		{"Commented", core.Change{WorkspaceID: ws, Kind: core.ProcedureCommented, ProcedureID: proc}},
		{"AccessChanged", core.Change{WorkspaceID: ws, Kind: core.AccessChanged}},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decode(notified(tt.change, 42))
			if err != nil {
				t.Fatal(err)
			}
			if want := (Notification{Change: tt.change, Version: 42}); !reflect.DeepEqual(got, want) {
				t.Fatalf("decode = %s; want %s", show(got), show(want))
			}
		})
	}
	invalid := []struct {
		name, payload string
	}{
		{"ErrNotJSON", "not json"},
		{"ErrEmpty", ""},
		{"ErrNoVersion", notified(full, 0)},
		{"ErrNoWorkspace", notified(core.Change{Kind: core.AccessChanged}, 1)},
		{"ErrUnknownKind", notified(core.Change{WorkspaceID: ws, Kind: "EXPLODED", ProcedureID: proc}, 1)},
		{"ErrNoProcedure", notified(core.Change{WorkspaceID: ws, Kind: core.ProcedureUpdated}, 1)},
		{"ErrBadState", strings.Replace(notified(full, 1), string(procedure.StateCOMPLETED), "LOST", 1)},
		{"ErrBadID", strings.Replace(notified(full, 1), ws.String(), "not-a-uuid", 1)},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := decode(tt.payload); err == nil {
				t.Fatalf("decode(%q) = %s; want an error", tt.payload, show(e))
			}
		})
	}
}
