package events

import (
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/core"
)

// TestPostgresReconnect ends instance A's LISTEN session, as a failover or
// an operator would, and checks that A's subscribers are told to refetch
// once it is listening again and hear later changes, while B's subscribers
// are not disturbed.
func TestPostgresReconnect(t *testing.T) {
	t.Parallel()
	env := newPGEnv(t)
	svc := env.service()
	f := setup(t, env.db, svc, "REC")
	subA, subB := env.a.hub.Subscribe(f.ws), env.b.hub.Subscribe(f.ws)

	terminateListener(t, env.url, env.a.name)
	// lib/pq retries after its backoff; the Refetch comes once LISTEN is
	// back in place, so every change committed after it is heard.
	if e := receive(t, subA, 30*time.Second); !e.Refetch || e.WorkspaceID != f.ws || e.Kind != "" {
		t.Fatalf("A's first event after the loss = %s; want a Refetch", show(e))
	}
	p := f.create(t, "After the loss")
	for name, s := range map[string]*Subscription{"A": subA, "B": subB} {
		if e := receive(t, s, deliveryBound); e.Refetch || e.Kind != core.ProcedureCreated || e.ProcedureID != p.ID {
			t.Fatalf("%s got %s; want the creation", name, show(e))
		}
	}
}

// terminateListener ends the LISTEN session named appName of the database
// at rawURL. Its subscribers' Refetch tells when the listener is back.
func terminateListener(t *testing.T, rawURL, appName string) {
	t.Helper()
	admin, err := sql.Open("postgres", rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const sessions = `FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND query LIKE 'LISTEN%'`
	var killed int
	if err := admin.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) `+sessions, appName).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d LISTEN sessions named %s; want 1", killed, appName)
	}
}

// TestListenerDropsMalformed sends payloads no announcer sends and checks
// that each is dropped (and logged) without disturbing the listener.
func TestListenerDropsMalformed(t *testing.T) {
	t.Parallel()
	env := newPGEnv(t)
	logs := &countingHandler{}
	c := env.listen(t, "instance_c", slog.New(logs))
	svc := env.service()
	f := setup(t, env.db, svc, "BAD")
	sub := c.hub.Subscribe(f.ws)

	bad := []string{
		`not json`,
		`{"workspaceId":"` + f.ws.String() + `","kind":"CREATED","procedureId":"` + f.ws.String() + `"}`,
		`{"workspaceId":"` + f.ws.String() + `","kind":"EXPLODED","procedureId":"` + f.ws.String() + `","version":3}`,
		`{"workspaceId":"not-a-uuid","kind":"CREATED","version":3}`,
		`{"workspaceId":"` + f.ws.String() + `","kind":"MOVED","procedureId":"` + f.ws.String() + `","version":3,"after":{"projectId":"` + f.ws.String() + `","state":"LOST"}}`,
		``,
	}
	admin, err := sql.Open("postgres", env.url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, payload := range bad {
		if _, err := admin.Exec(`SELECT pg_notify($1, $2)`, Channel, payload); err != nil {
			t.Fatal(err)
		}
	}
	p := f.create(t, "Valid")
	if e := receive(t, sub, deliveryBound); e.Kind != core.ProcedureCreated || e.ProcedureID != p.ID {
		t.Fatalf("got %s; want the creation", show(e))
	}
	if got := logs.warnings.Load(); got != int64(len(bad)) {
		t.Fatalf("%d warnings logged; want one per malformed payload (%d)", got, len(bad))
	}
}

// countingHandler counts the warnings logged.
type countingHandler struct{ warnings atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, "malformed") {
		h.warnings.Add(1)
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func TestListenerDSN(t *testing.T) {
	tests := []struct {
		name, dsn string
		want      map[string]string
		wantErr   bool
	}{
		{"Plain", "postgres://u@db:5432/app?sslmode=disable",
			map[string]string{"sslmode": "disable", "statement_timeout": "0", "lock_timeout": "0",
				"idle_in_transaction_session_timeout": "0", "application_name": "procsvc-events", "connect_timeout": "5"}, false},
		{"ConnectTimeoutKept", "postgres://u@a,b/app?port=1,2&connect_timeout=9&target_session_attrs=read-write",
			map[string]string{"connect_timeout": "9", "port": "1,2", "target_session_attrs": "read-write"}, false},
		{"PoolTimeoutsLifted", "postgresql://u@db/app?statement_timeout=5000&lock_timeout=2000&idle_in_transaction_session_timeout=10000&application_name=api",
			map[string]string{"statement_timeout": "0", "lock_timeout": "0",
				"idle_in_transaction_session_timeout": "0", "application_name": "api"}, false},
		{"ErrNotPostgres", "sqlite://data/procsvc.db", nil, true},
		{"ErrKeyValue", "host=db dbname=app", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := listenerDSN(tt.dsn, 0)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v; want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			u, err := url.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if u.Query().Get(k) != v {
					t.Errorf("%s = %q; want %q (%s)", k, u.Query().Get(k), v, got)
				}
			}
		})
	}
}

// TestListenErrors checks that Listen fails instead of waiting forever
// when it cannot listen.
func TestListenErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		dsn  string
	}{
		{"ErrInvalidURL", context.Background(), "mysql://u@db/app"},
		// Nothing listens on port 1: the first attempt is refused.
		{"ErrUnreachable", context.Background(), "postgres://u@127.0.0.1:1/app?sslmode=disable&connect_timeout=5"},
		{"ErrContextDone", cancelled, "postgres://u@127.0.0.1:1/app?sslmode=disable&connect_timeout=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(HubOptions{})
			l, err := Listen(tt.ctx, tt.dsn, h, nil)
			if err == nil {
				l.Close()
				t.Fatal("Listen succeeded; want an error")
			}
		})
	}
}
