-- Create index "procedure_category_id_created_at_id" to table: "procedures"
CREATE INDEX "procedure_category_id_created_at_id" ON "procedures" ("category_id", "created_at", "id");
-- Create index "procedure_doer_id_created_at_id" to table: "procedures"
CREATE INDEX "procedure_doer_id_created_at_id" ON "procedures" ("doer_id", "created_at", "id");
-- Create index "procedure_project_id_created_at_id" to table: "procedures"
CREATE INDEX "procedure_project_id_created_at_id" ON "procedures" ("project_id", "created_at", "id");
-- Hand-written (the diff never drops an index): the two indexes above lead
-- with category_id and doer_id, so they serve every lookup the single-column
-- ones did, and a write maintains one index fewer each.
DROP INDEX "procedure_category_id";
DROP INDEX "procedure_doer_id";
