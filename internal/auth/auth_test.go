package auth_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// syncBuffer collects log output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// open returns a fresh, migrated database of dialect without any lock or
// statement timeout of its own, and the driver name and DSN another client
// opens it with.
func open(t *testing.T, dialect string) (db *database.DB, driverName, dsn string) {
	t.Helper()
	var rawURL string
	switch dialect {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "auth.db")
		rawURL, driverName, dsn = "sqlite://"+path, "sqlite", "file:"+path
	default:
		rawURL = dbtest.CreatePostgres(t)
		driverName, dsn = "postgres", rawURL
	}
	db, err := database.Open(context.Background(), rawURL, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, driverName, dsn
}

// TestTokenUseNeverWaitsForAWorkspaceLock: a transaction left open on the
// workspace (its row lock on PostgreSQL, the write lock on SQLite) used to
// hold up every request whose token was due a lastUsedAt write, until the
// transaction ended or the database gave up (no lock_timeout on PostgreSQL;
// 10 s then a 500 on SQLite). Now the write is skipped after a short wait,
// the request is authenticated, and a later request records the use and
// bumps the workspace version once.
func TestTokenUseNeverWaitsForAWorkspaceLock(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, driverName, dsn := open(t, dialect)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang fails, below
			defer cancel()
			b, err := core.New(db.Client).CreateWorkspace(ctx, core.NewWorkspace{Name: "A", Key: "AUT", AdminName: "A", AdminEmail: "a@aut.example"})
			if err != nil {
				t.Fatal(err)
			}
			sys := viewer.System(ctx)
			stored := func() (lastUsed *time.Time, version int64) {
				tok, err := db.Client.Token.Get(sys, b.Token.ID)
				if err != nil {
					t.Fatal(err)
				}
				ws, err := db.Client.Workspace.Get(sys, b.Workspace.ID)
				if err != nil {
					t.Fatal(err)
				}
				return tok.LastUsedAt, ws.Version
			}
			_, version := stored()
			var logs syncBuffer
			a := auth.New(db, auth.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			header := "Bearer " + b.Secret

			release := dbtest.HoldWorkspace(t, driverName, dsn, b.Workspace.ID.String())
			v, err := a.Authenticate(ctx, header)
			if err != nil {
				t.Fatalf("authentication behind a held workspace lock: %v", err)
			}
			if v.TokenID != b.Token.ID || v.WorkspaceID != b.Workspace.ID || v.VersionKnown {
				t.Fatalf("viewer = %+v", *v)
			}
			if used, ver := stored(); used != nil || ver != version {
				t.Fatalf("the skipped write changed lastUsedAt %v, version %d → %d", used, version, ver)
			}
			if !strings.Contains(logs.String(), "token use not recorded") {
				t.Fatalf("the skipped write was not logged: %q", logs.String())
			}
			release()

			n := db.Statements()
			v, err = a.Authenticate(ctx, header)
			if err != nil {
				t.Fatal(err)
			}
			// The lookup and the two writes, as before: no statement was
			// added to what is counted.
			if got := db.Statements() - n; got != 3 {
				t.Fatalf("the first use cost %d statements, want 3", got)
			}
			used, ver := stored()
			if used == nil || ver != version+1 || v.VersionKnown {
				t.Fatalf("after the lock: lastUsedAt %v, version %d → %d, viewer %+v", used, version, ver, *v)
			}
			v, err = a.Authenticate(ctx, header)
			if err != nil {
				t.Fatal(err)
			}
			if !v.VersionKnown || v.WorkspaceVersion != version+1 {
				t.Fatalf("within the minute the viewer carries the version: %+v", *v)
			}
		})
	}
}
