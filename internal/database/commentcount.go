package database

import (
	"context"
	"fmt"
)

// A procedure's comment_count is how many comments it holds: the total of
// every page of its comments, read with the page (internal/loader,
// core.ProcedureComments) so that no read counts a procedure's comments,
// however many it holds. The database keeps it, whatever writes comments
// (the core, a bulk insert, a procedure's delete cascading to its
// comments): triggers on comments adjust it in the statement that inserts
// or deletes them, so it is exact in every snapshot and costs a write no
// round trip. PostgreSQL's triggers are a versioned migration
// (ent/migrate/migrations, comment_counts); SQLite's are sqliteCommentCounts,
// made by Migrate.

// sqliteCommentTriggers are the triggers that keep comment_count on SQLite,
// by name. A procedure's delete cascades to its comments, whose trigger then
// finds no procedure row to count.
var sqliteCommentTriggers = []struct{ name, ddl string }{
	{"comments_added", `CREATE TRIGGER "comments_added" AFTER INSERT ON "comments" BEGIN ` +
		`UPDATE "procedures" SET "comment_count" = "comment_count" + 1 WHERE "id" = NEW."procedure_id"; END`},
	{"comments_removed", `CREATE TRIGGER "comments_removed" AFTER DELETE ON "comments" BEGIN ` +
		`UPDATE "procedures" SET "comment_count" = "comment_count" - 1 WHERE "id" = OLD."procedure_id"; END`},
}

// sqliteCommentCounts makes the triggers that keep comment_count when the
// database lacks them (made before counts, or a table ent's migration
// rebuilt, which drops its triggers) and then recounts every procedure's
// comments, in one transaction (BEGIN IMMEDIATE: no comment is written
// between the recount and the triggers). It also drops the index on
// comments that comment_procedure_id_created_at_id replaced: that index
// leads with its columns, and ent's migration never drops an index.
func (db *DB) sqliteCommentCounts(ctx context.Context) error {
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS "comment_procedure_id_created_at"`); err != nil {
		return err
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "sqlite_master" WHERE "type" = 'trigger' AND "tbl_name" = 'comments' AND "name" IN (?, ?)`,
		sqliteCommentTriggers[0].name, sqliteCommentTriggers[1].name).Scan(&have); err != nil {
		return err
	}
	if have < len(sqliteCommentTriggers) {
		for _, t := range sqliteCommentTriggers {
			if _, err := tx.ExecContext(ctx, `DROP TRIGGER IF EXISTS "`+t.name+`"`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, t.ddl); err != nil {
				return fmt.Errorf("trigger %s: %w", t.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE "procedures" SET "comment_count" = `+
			`(SELECT count(*) FROM "comments" WHERE "comments"."procedure_id" = "procedures"."id")`); err != nil {
			return err
		}
	}
	return tx.Commit()
}
