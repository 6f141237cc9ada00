-- Modify "procedures" table
ALTER TABLE "procedures" ADD COLUMN "project_name" character varying NOT NULL DEFAULT '';
-- Backfill the copy for procedures created before this migration (hand-written).
UPDATE "procedures" SET "project_name" = "projects"."name" FROM "projects" WHERE "projects"."id" = "procedures"."project_id";
-- Create index "procedure_workspace_id_priority_created_at" to table: "procedures"
CREATE INDEX "procedure_workspace_id_priority_created_at" ON "procedures" ("workspace_id", "priority", "created_at");
-- Create index "procedure_workspace_id_project_name_id" to table: "procedures"
CREATE INDEX "procedure_workspace_id_project_name_id" ON "procedures" ("workspace_id", "project_name", "id");
-- Create index "procedure_workspace_id_state_created_at" to table: "procedures"
CREATE INDEX "procedure_workspace_id_state_created_at" ON "procedures" ("workspace_id", "state", "created_at");
