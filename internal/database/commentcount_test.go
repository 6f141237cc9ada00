package database_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// wantCountsExact fails t unless every procedure's comment_count is the
// number of its comments.
func wantCountsExact(t *testing.T, db *database.DB) {
	t.Helper()
	rows, err := db.SQL.QueryContext(context.Background(), `SELECT "p"."short_id", "p"."comment_count",
		(SELECT count(*) FROM "comments" AS "c" WHERE "c"."procedure_id" = "p"."id") FROM "procedures" AS "p"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var (
			id          string
			kept, count int
		)
		if err := rows.Scan(&id, &kept, &count); err != nil {
			t.Fatal(err)
		}
		if kept != count {
			t.Errorf("%s: comment_count %d, but %d comments", id, kept, count)
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no procedure checked")
	}
}

// TestCommentCountsKeptByTheDatabase: a procedure's comment_count is the
// number of its comments after whatever writes them: one insert, a bulk
// insert of one statement or of many, a delete of one, of many at once,
// and a procedure's delete, which takes its comments (and no other
// procedure's count) with it.
func TestCommentCountsKeptByTheDatabase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := viewer.System(context.Background())
		seeded, err := bench.Seed(ctx, db.Client, "Counts", "CNT", bench.Shape{Procedures: 3, Projects: 1, Members: 1, MaxComments: 2}, 1)
		if err != nil {
			t.Fatal(err)
		}
		procs, err := db.Client.Procedure.Query().Order(procedure.ByNumber()).All(ctx)
		if err != nil || len(procs) != 3 {
			t.Fatalf("%d procedures: %v", len(procs), err)
		}
		wantCountsExact(t, db)
		author, at := seeded.MemberIDs[0], time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		text := func(i int) string { return fmt.Sprintf("c%d", i) }
		if _, err := db.Client.Comment.Create().SetWorkspaceID(seeded.WorkspaceID).SetProcedureID(procs[0].ID).
			SetAuthorID(author).SetText("one").Save(ctx); err != nil {
			t.Fatal(err)
		}
		// One statement of 250 rows, then 2 500 rows in three.
		if err := bench.SeedComments(ctx, db.Client, seeded.WorkspaceID, procs[1].ID, author, 250, at, text); err != nil {
			t.Fatal(err)
		}
		if err := bench.SeedComments(ctx, db.Client, seeded.WorkspaceID, procs[2].ID, author, 2500, at, text); err != nil {
			t.Fatal(err)
		}
		wantCountsExact(t, db)
		if p, err := db.Client.Procedure.Get(ctx, procs[2].ID); err != nil || p.CommentCount < 2500 {
			t.Fatalf("%s holds %d comments: %v", procs[2].ShortID, p.CommentCount, err)
		}

		one, err := db.Client.Comment.Query().Where(comment.ProcedureID(procs[0].ID)).First(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Client.Comment.DeleteOne(one).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		some, err := db.Client.Comment.Query().Where(comment.ProcedureID(procs[1].ID)).Limit(100).IDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := db.Client.Comment.Delete().Where(comment.IDIn(some...)).Exec(ctx); err != nil || n != 100 {
			t.Fatalf("deleted %d: %v", n, err)
		}
		wantCountsExact(t, db)

		// The procedure's comments go with it; its siblings keep theirs.
		if err := db.Client.Procedure.DeleteOneID(procs[2].ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := db.Client.Comment.Query().Where(comment.ProcedureID(procs[2].ID)).Count(ctx); err != nil || n != 0 {
			t.Fatalf("%d comments of a deleted procedure: %v", n, err)
		}
		wantCountsExact(t, db)
	})
}

// TestCommentCountsOfAnOlderDatabase: a database from before the counts
// (PostgreSQL migrated by an older binary; a SQLite file without the
// column or its triggers) has every procedure's comments counted when it
// is migrated, the counts are kept from then on, and the index on
// comments the new one replaces is gone.
func TestCommentCountsOfAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	indexes := func(t *testing.T, db *database.DB) map[string]bool {
		t.Helper()
		query := `SELECT "indexname" FROM "pg_indexes" WHERE "tablename" = 'comments'`
		if db.Dialect != dialect.Postgres {
			query = `SELECT "name" FROM "sqlite_master" WHERE "type" = 'index' AND "tbl_name" = 'comments'`
		}
		rows, err := db.SQL.QueryContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]bool{}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			out[name] = true
		}
		return out
	}
	// kept adds a comment to a procedure of the upgraded database and
	// checks that its count follows.
	kept := func(t *testing.T, db *database.DB) {
		t.Helper()
		wantCountsExact(t, db)
		if idx := indexes(t, db); idx["comment_procedure_id_created_at"] || !idx["comment_procedure_id_created_at_id"] {
			t.Fatalf("indexes of comments after the upgrade: %v", idx)
		}
		sys := viewer.System(ctx)
		p, err := db.Client.Procedure.Query().Order(procedure.ByNumber()).First(sys)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Client.Comment.Create().SetWorkspaceID(p.WorkspaceID).SetProcedureID(p.ID).SetAuthorID(p.CreatorID).
			SetText("after").Save(sys); err != nil {
			t.Fatal(err)
		}
		if after, err := db.Client.Procedure.Get(sys, p.ID); err != nil || after.CommentCount != p.CommentCount+1 {
			t.Fatalf("count after one more comment: %d, want %d (%v)", after.CommentCount, p.CommentCount+1, err)
		}
		wantCountsExact(t, db)
	}

	t.Run("sqlite", func(t *testing.T) {
		db := dbtest.Open(t, "sqlite")
		if _, err := bench.Seed(ctx, db.Client, "Old", "OLD", bench.Shape{Procedures: 20, Projects: 1, Members: 1, MaxComments: 5}, 1); err != nil {
			t.Fatal(err)
		}
		// The file as an older binary left it.
		for _, stmt := range []string{`DROP TRIGGER "comments_added"`, `DROP TRIGGER "comments_removed"`,
			`ALTER TABLE "procedures" DROP COLUMN "comment_count"`,
			`CREATE INDEX "comment_procedure_id_created_at" ON "comments" ("procedure_id", "created_at")`} {
			if _, err := db.SQL.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		kept(t, db)
	})

	t.Run("postgres", func(t *testing.T) {
		db := openEmptyPostgres(t)
		var version string
		ms, err := database.Migrations()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Name == "comment_counts" {
				version = m.Version
			}
		}
		if version == "" {
			t.Fatal("no comment_counts migration")
		}
		if _, err := db.ApplyMigrationsBefore(ctx, version); err != nil {
			t.Fatal(err)
		}
		// Rows as the older schema holds them: two procedures, of three
		// comments and of none.
		ws, m, proj := uuid.New(), uuid.New(), uuid.New()
		p1, p2 := uuid.New(), uuid.New()
		now := time.Now().UTC()
		stmts := []struct {
			q    string
			args []any
		}{
			{`INSERT INTO "workspaces" ("id", "name", "created_at") VALUES ($1, 'Old', $2)`, []any{ws, now}},
			{`INSERT INTO "members" ("id", "name", "email", "created_at", "workspace_id") VALUES ($1, 'M', 'm@example.com', $2, $3)`, []any{m, now, ws}},
			{`INSERT INTO "projects" ("id", "created_at", "updated_at", "name", "workspace_id") VALUES ($1, $2, $2, 'P', $3)`, []any{proj, now, ws}},
		}
		for i, p := range []uuid.UUID{p1, p2} {
			stmts = append(stmts, struct {
				q    string
				args []any
			}{`INSERT INTO "procedures" ("id", "created_at", "updated_at", "number", "short_id", "name", "priority", "state", "position", "due_at", "creator_id", "project_id", "workspace_id")
				VALUES ($1, $2, $2, $3, $4, 'N', 'LOW', 'TODO', 1, $2, $5, $6, $7)`, []any{p, now, i + 1, fmt.Sprintf("OLD-%d", i+1), m, proj, ws}})
		}
		for i := range 3 {
			stmts = append(stmts, struct {
				q    string
				args []any
			}{`INSERT INTO "comments" ("id", "created_at", "updated_at", "text", "author_id", "procedure_id", "workspace_id") VALUES ($1, $2, $2, $3, $4, $5, $6)`,
				[]any{uuid.New(), now, fmt.Sprintf("c%d", i), m, p1, ws}})
		}
		for _, s := range stmts {
			if _, err := db.SQL.ExecContext(ctx, s.q, s.args...); err != nil {
				t.Fatalf("%s: %v", s.q, err)
			}
		}
		if applied, err := db.ApplyMigrations(ctx); err != nil || len(applied) == 0 {
			t.Fatalf("applied %v: %v", applied, err)
		}
		var n int
		if err := db.SQL.QueryRowContext(ctx, `SELECT "comment_count" FROM "procedures" WHERE "id" = $1`, p1).Scan(&n); err != nil || n != 3 {
			t.Fatalf("backfilled count %d, want 3 (%v)", n, err)
		}
		kept(t, db)
	})
}
