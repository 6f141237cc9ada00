package loader_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// One procedure's comments (a write's answer, a record's read) are read by
// a statement PostgreSQL plans once and keeps, as it does a list's: after
// its first five runs (custom plans, which PostgreSQL always makes first)
// every run uses the kept generic plan. Read with its procedure in a
// uuid[] of one, PostgreSQL estimated the array at ten elements, found
// the generic plan dearer than the custom ones and planned the statement
// afresh at every run (docs/performance.md, "Plans kept for one
// procedure's comments"). Each read alone also reads what ent reads: the
// window of its own procedure's comments, none of another workspace's.
func TestPostgresKeepsThePlanOfOneProceduresComments(t *testing.T) {
	if !slices.Contains(dbtest.Dialects(t), "postgres") {
		t.Skip("PostgreSQL only: " + dbtest.EnvPostgres + " is not set")
	}
	db := dbtest.Open(t, "postgres")
	sys := viewer.System(context.Background())
	// Enough procedures that PostgreSQL finds them by their index, as it
	// does on a real workspace, and statistics of them.
	a, b := seedTwo(t, db, bench.Shape{Procedures: 3000, Projects: 2, Categories: 2, Members: 2, MaxComments: 4})
	if _, err := db.SQL.ExecContext(sys, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	// One connection, so that the statements the reads prepared are the
	// ones pg_prepared_statements shows below (it shows its session's).
	db.SQL.SetMaxOpenConns(1)
	asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
	procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(a.WorkspaceID)).Order(procedure.ByShortID()).Limit(12).IDs(sys)
	if err != nil || len(procs) != 12 {
		t.Fatalf("%d procedures: %v", len(procs), err)
	}
	foreign, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(b.WorkspaceID)).FirstID(sys)
	if err != nil {
		t.Fatal(err)
	}
	w := loader.CommentWindow{Last: 2}
	read := 0
	for _, ctx := range []context.Context{sys, asA} {
		for _, id := range procs {
			stored, err := db.Client.Comment.Query().Where(comment.ProcedureID(id)).Count(sys)
			if err != nil {
				t.Fatal(err)
			}
			n, err := loader.ReadComments(ctx, db, []uuid.UUID{id}, w)
			if err != nil {
				t.Fatal(err)
			}
			if want := min(stored, w.Last); n != want {
				t.Fatalf("procedure %s alone: %d comments, want %d", id, n, want)
			}
			read += n
		}
	}
	if read == 0 {
		t.Fatal("no comments read: nothing is tested")
	}
	if n, err := loader.ReadComments(asA, db, []uuid.UUID{foreign}, w); err != nil || n != 0 {
		t.Fatalf("a's viewer reading b's procedure alone: %d comments, %v; want none", n, err)
	}
	rows, err := db.SQL.QueryContext(sys, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM "comments"%' AND statement LIKE '%"comment_count"%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	statements := 0
	for rows.Next() {
		var generic, custom int64
		if err := rows.Scan(&generic, &custom); err != nil {
			t.Fatal(err)
		}
		statements++
		// Each statement (the system's, the viewer's) ran 12 times or 13.
		if custom > 5 || generic == 0 {
			t.Errorf("a comment statement of one procedure: %d custom plans, %d generic; want at most 5 custom, then the generic plan kept", custom, generic)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if statements != 2 {
		t.Fatalf("%d prepared comment statements; want 2 (the system's, the viewer's)", statements)
	}
}
