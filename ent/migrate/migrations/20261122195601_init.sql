-- Create "workspaces" table
CREATE TABLE "workspaces" ("id" uuid NOT NULL, "name" character varying NOT NULL, "key" character varying NOT NULL DEFAULT 'PRC', "procedure_seq" bigint NOT NULL DEFAULT 0, "version" bigint NOT NULL DEFAULT 0, "created_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create "categories" table
CREATE TABLE "categories" ("id" uuid NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "name" character varying NOT NULL, "workspace_id" uuid NOT NULL, PRIMARY KEY ("id"), CONSTRAINT "categories_workspaces_categories" FOREIGN KEY ("workspace_id") REFERENCES "workspaces" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION);
-- Create index "category_workspace_id_name" to table: "categories"
CREATE INDEX "category_workspace_id_name" ON "categories" ("workspace_id", "name");
-- Create "members" table
CREATE TABLE "members" ("id" uuid NOT NULL, "name" character varying NOT NULL, "email" character varying NOT NULL, "role" character varying NOT NULL DEFAULT 'MEMBER', "created_at" timestamptz NOT NULL, "removed_at" timestamptz NULL, "workspace_id" uuid NOT NULL, PRIMARY KEY ("id"), CONSTRAINT "members_workspaces_members" FOREIGN KEY ("workspace_id") REFERENCES "workspaces" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION);
-- Create index "member_workspace_id_email" to table: "members"
CREATE UNIQUE INDEX "member_workspace_id_email" ON "members" ("workspace_id", "email");
-- Create index "member_workspace_id_name" to table: "members"
CREATE INDEX "member_workspace_id_name" ON "members" ("workspace_id", "name");
-- Create "projects" table
CREATE TABLE "projects" ("id" uuid NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "name" character varying NOT NULL, "started_at" timestamptz NULL, "due_at" timestamptz NULL, "workspace_id" uuid NOT NULL, PRIMARY KEY ("id"), CONSTRAINT "projects_workspaces_projects" FOREIGN KEY ("workspace_id") REFERENCES "workspaces" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION);
-- Create index "project_workspace_id_name" to table: "projects"
CREATE INDEX "project_workspace_id_name" ON "projects" ("workspace_id", "name");
-- Create "procedures" table
CREATE TABLE "procedures" ("id" uuid NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "number" bigint NOT NULL, "short_id" character varying NOT NULL, "name" character varying NOT NULL, "priority" character varying NOT NULL, "state" character varying NOT NULL, "content" text NULL, "position" double precision NOT NULL, "due_at" timestamptz NOT NULL, "capture_id" character varying NULL, "display_video" boolean NOT NULL DEFAULT false, "is_fine_tuned_data" boolean NOT NULL DEFAULT false, "category_id" uuid NULL, "doer_id" uuid NULL, "creator_id" uuid NOT NULL, "project_id" uuid NOT NULL, "workspace_id" uuid NOT NULL, PRIMARY KEY ("id"), CONSTRAINT "procedures_categories_procedures" FOREIGN KEY ("category_id") REFERENCES "categories" ("id") ON UPDATE NO ACTION ON DELETE SET NULL, CONSTRAINT "procedures_members_assigned" FOREIGN KEY ("doer_id") REFERENCES "members" ("id") ON UPDATE NO ACTION ON DELETE SET NULL, CONSTRAINT "procedures_members_created" FOREIGN KEY ("creator_id") REFERENCES "members" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION, CONSTRAINT "procedures_projects_procedures" FOREIGN KEY ("project_id") REFERENCES "projects" ("id") ON UPDATE NO ACTION ON DELETE RESTRICT, CONSTRAINT "procedures_workspaces_procedures" FOREIGN KEY ("workspace_id") REFERENCES "workspaces" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION);
-- Create index "procedure_category_id" to table: "procedures"
CREATE INDEX "procedure_category_id" ON "procedures" ("category_id");
-- Create index "procedure_creator_id" to table: "procedures"
CREATE INDEX "procedure_creator_id" ON "procedures" ("creator_id");
-- Create index "procedure_doer_id" to table: "procedures"
CREATE INDEX "procedure_doer_id" ON "procedures" ("doer_id");
-- Create index "procedure_project_id_state_position" to table: "procedures"
CREATE INDEX "procedure_project_id_state_position" ON "procedures" ("project_id", "state", "position");
-- Create index "procedure_workspace_id_created_at_id" to table: "procedures"
CREATE INDEX "procedure_workspace_id_created_at_id" ON "procedures" ("workspace_id", "created_at", "id");
-- Create index "procedure_workspace_id_due_at_id" to table: "procedures"
CREATE INDEX "procedure_workspace_id_due_at_id" ON "procedures" ("workspace_id", "due_at", "id");
-- Create index "procedure_workspace_id_name_id" to table: "procedures"
CREATE INDEX "procedure_workspace_id_name_id" ON "procedures" ("workspace_id", "name", "id");
-- Create index "procedure_workspace_id_short_id" to table: "procedures"
CREATE UNIQUE INDEX "procedure_workspace_id_short_id" ON "procedures" ("workspace_id", "short_id");
-- Create "comments" table
CREATE TABLE "comments" ("id" uuid NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "text" text NOT NULL, "author_id" uuid NOT NULL, "procedure_id" uuid NOT NULL, "workspace_id" uuid NOT NULL, PRIMARY KEY ("id"), CONSTRAINT "comments_members_comments" FOREIGN KEY ("author_id") REFERENCES "members" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION, CONSTRAINT "comments_procedures_comments" FOREIGN KEY ("procedure_id") REFERENCES "procedures" ("id") ON UPDATE NO ACTION ON DELETE CASCADE, CONSTRAINT "comments_workspaces_comments" FOREIGN KEY ("workspace_id") REFERENCES "workspaces" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION);
-- Create index "comment_procedure_id_created_at" to table: "comments"
CREATE INDEX "comment_procedure_id_created_at" ON "comments" ("procedure_id", "created_at");
-- Create "tokens" table
CREATE TABLE "tokens" ("id" uuid NOT NULL, "name" character varying NOT NULL DEFAULT '', "secret_hash" character varying NOT NULL, "created_at" timestamptz NOT NULL, "last_used_at" timestamptz NULL, "expires_at" timestamptz NULL, "revoked_at" timestamptz NULL, "member_id" uuid NOT NULL, "workspace_id" uuid NOT NULL, PRIMARY KEY ("id"), CONSTRAINT "tokens_members_tokens" FOREIGN KEY ("member_id") REFERENCES "members" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION, CONSTRAINT "tokens_workspaces_tokens" FOREIGN KEY ("workspace_id") REFERENCES "workspaces" ("id") ON UPDATE NO ACTION ON DELETE NO ACTION);
-- Create index "tokens_secret_hash_key" to table: "tokens"
CREATE UNIQUE INDEX "tokens_secret_hash_key" ON "tokens" ("secret_hash");
