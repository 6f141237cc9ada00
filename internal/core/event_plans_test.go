package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// seedEvents inserts n events into workspace ws with ids made by SQL: a
// procedure, project and actor each drawn from a pool (procedures of
// 5 000, projects of 50, members of 20), kinds in turn.
func seedEvents(t *testing.T, db *database.DB, ws uuid.UUID, n int) {
	t.Helper()
	kinds := make([]string, len(core.EventKinds))
	for i, k := range core.EventKinds {
		kinds[i] = "'" + string(k) + "'"
	}
	// Ids end in their kind's byte (internal/ids): 06 procedure, 04
	// project, 02 member, 08 event.
	id := func(expr, kind string) string {
		return `('00000000-0000-7000-8000-' || lpad(to_hex(` + expr + `), 10, '0') || '` + kind + `')::uuid`
	}
	q := `INSERT INTO events (id, workspace_id, version, kind, entity_id, procedure_id, project_id, actor_member_id, actor_token_id, created_at, changes)
		SELECT gen_random_uuid(), $1, g, (ARRAY[` + strings.Join(kinds, ",") + `])[1 + g % ` + strconv.Itoa(len(kinds)) + `],
			` + id("g % 5000", "06") + `, ` + id("g % 5000", "06") + `, ` + id("g % 50", "04") + `, ` + id("g % 20", "02") + `, NULL,
			now() - (` + strconv.Itoa(n) + ` - g) * interval '1 second', '[]'
		FROM generate_series(1, $2) AS g`
	if _, err := db.SQL.ExecContext(context.Background(), q, ws, n); err != nil {
		t.Fatal(err)
	}
}

// poolID is the n-th id of kind (its last byte, in hex) that seedEvents
// draws from.
func poolID(n int, kind string) string {
	return fmt.Sprintf("00000000-0000-7000-8000-%010x%s", n, kind)
}

// TestEventPlansUseIndexes runs EXPLAIN on PostgreSQL, at explainRows()
// events in one workspace beside four times as many in noise workspaces,
// for every statement the history and events reads send (page, next page,
// deep page and total; each filter, both orders; the nested histories) and
// fails on any sequential scan of events.
func TestEventPlansUseIndexes(t *testing.T) {
	if len(dbtest.Dialects(t)) < 2 {
		t.Skip("plans are checked on PostgreSQL; set PROCSVC_TEST_POSTGRES")
	}
	db := dbtest.Open(t, "postgres")
	ctx := context.Background()
	rows := explainRows()
	svc := core.New(db.Client)
	boot, err := svc.CreateWorkspace(ctx, core.NewWorkspace{Name: "Plans", Key: "PLN", AdminName: "A", AdminEmail: "a@plans.example"})
	if err != nil {
		t.Fatal(err)
	}
	// The workspace's own events start after its creation's.
	if _, err := db.SQL.ExecContext(ctx, "DELETE FROM events"); err != nil {
		t.Fatal(err)
	}
	seedEvents(t, db, boot.Workspace.ID, rows)
	for i := 0; i < 4; i++ {
		seedEvents(t, db, uuid.Must(uuid.NewV7()), rows)
	}
	if _, err := db.SQL.ExecContext(ctx, "VACUUM ANALYZE events"); err != nil {
		t.Fatal(err)
	}
	vctx := viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: boot.Workspace.ID, MemberID: boot.Admin.ID, Role: viewer.RoleViewer})
	procedure, project, actor := poolID(42, "06"), poolID(7, "04"), poolID(3, "02")
	after := int64(rows - 500)
	shapes := map[string]core.EventFilter{
		"NoFilter":   {},
		"After":      {After: &after},
		"Kind":       {Kinds: []string{"procedure.updated"}},
		"Kinds":      {Kinds: []string{"member.added", "token.revoked"}},
		"Entity":     {EntityID: procedure},
		"Procedure":  {ProcedureID: procedure},
		"Project":    {ProjectID: project},
		"Actor":      {ActorID: actor},
		"Everything": {After: &after, Kinds: []string{"comment.created"}, ProjectID: project},
	}
	var (
		mu    sync.Mutex
		stmts []database.Statement
	)
	db.Record(func(s database.Statement) {
		if strings.Contains(s.Query, `"events"`) {
			mu.Lock()
			stmts = append(stmts, s)
			mu.Unlock()
		}
	})
	first := 20
	for name, f := range shapes {
		for _, o := range []core.EventOrder{{}, {OldestFirst: true}} {
			list, err := svc.Events(vctx, f, o, core.Window{First: &first})
			if err != nil {
				t.Fatalf("%s %v: %v", name, o, err)
			}
			if n := len(list.Items); n > 0 {
				c := list.Cursor(list.Items[n-1])
				if _, err := svc.Events(vctx, f, o, core.Window{First: &first, After: &c}); err != nil {
					t.Fatalf("%s %v next page: %v", name, o, err)
				}
			} else if name != "Everything" {
				t.Fatalf("%s: no events in the seeded data", name)
			}
			if _, err := svc.Events(vctx, f, o, core.Window{Last: &first}); err != nil {
				t.Fatalf("%s %v last page: %v", name, o, err)
			}
		}
	}
	history, err := svc.ProcedureHistory(vctx, procedure, core.Window{First: &first})
	if err != nil || len(history.Items) == 0 {
		t.Fatalf("history: %v, %v", history, err)
	}
	c := history.Cursor(history.Items[len(history.Items)-1])
	if _, err := svc.ProcedureHistory(vctx, procedure, core.Window{First: &first, After: &c}); err != nil {
		t.Fatal(err)
	}
	var procs []uuid.UUID
	for n := 1; n <= 5; n++ {
		procs = append(procs, uuid.MustParse(poolID(n, "06")))
	}
	if _, err := svc.ProcedureHistories(vctx, procs, core.Window{First: &first}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ProcedureHistories(vctx, procs[:1], core.Window{First: &first, After: &c}); err != nil {
		t.Fatal(err)
	}
	db.Record(nil)
	seen := map[string]bool{}
	for _, s := range stmts {
		if seen[s.Query] {
			continue
		}
		seen[s.Query] = true
		var plan string
		if err := db.SQL.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+s.Query, s.Args...).Scan(&plan); err != nil {
			t.Fatalf("explain %s: %v", s.Query, err)
		}
		if scans := seqScansOf(t, plan, "events"); len(scans) > 0 {
			t.Errorf("sequential scan of %v in:\n%s\nplan: %s", scans, s.Query, plan)
		}
	}
	t.Logf("checked %d distinct statements at %d events (and %d of other workspaces)", len(seen), rows, 4*rows)
}

// seqScansOf returns the relations among rels a JSON plan reads with a
// sequential scan.
func seqScansOf(t *testing.T, plan string, rels ...string) []string {
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Node Type"] == "Seq Scan" {
			if rel, _ := n["Relation Name"].(string); slices.Contains(rels, rel) {
				out = append(out, rel)
			}
		}
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				if m, ok := k.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	for _, d := range doc {
		walk(d.Plan)
	}
	return out
}
