-- Create index "comment_procedure_id_created_at_id" to table: "comments"
CREATE INDEX "comment_procedure_id_created_at_id" ON "comments" ("procedure_id", "created_at", "id");
-- Modify "procedures" table
ALTER TABLE "procedures" ADD COLUMN "comment_count" bigint NOT NULL DEFAULT 0;
-- Hand-written from here. The index above leads with the old one's
-- columns, so it serves every lookup the old one did (the diff never drops
-- an index).
DROP INDEX "comment_procedure_id_created_at";
-- Backfill: each procedure's count of its comments.
UPDATE "procedures" SET "comment_count" = "c"."n"
FROM (SELECT "procedure_id", count(*) AS "n" FROM "comments" GROUP BY "procedure_id") AS "c"
WHERE "procedures"."id" = "c"."procedure_id";
-- From now on the database keeps the count, whatever writes comments: the
-- rows one statement inserts or deletes adjust each of their procedures'
-- counts once. A procedure's delete cascades to its comments, whose
-- trigger then finds no procedure row to count. The SQLite equivalent is
-- internal/database/commentcount.go.
CREATE FUNCTION "procsvc_comments_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "procedures" SET "comment_count" = "procedures"."comment_count" + "c"."n"
  FROM (SELECT "procedure_id", count(*) AS "n" FROM "added" GROUP BY "procedure_id") AS "c"
  WHERE "procedures"."id" = "c"."procedure_id";
  RETURN NULL;
END $$;
CREATE FUNCTION "procsvc_comments_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "procedures" SET "comment_count" = "procedures"."comment_count" - "c"."n"
  FROM (SELECT "procedure_id", count(*) AS "n" FROM "removed" GROUP BY "procedure_id") AS "c"
  WHERE "procedures"."id" = "c"."procedure_id";
  RETURN NULL;
END $$;
CREATE TRIGGER "comments_added" AFTER INSERT ON "comments"
  REFERENCING NEW TABLE AS "added" FOR EACH STATEMENT EXECUTE FUNCTION "procsvc_comments_added"();
CREATE TRIGGER "comments_removed" AFTER DELETE ON "comments"
  REFERENCING OLD TABLE AS "removed" FOR EACH STATEMENT EXECUTE FUNCTION "procsvc_comments_removed"();
