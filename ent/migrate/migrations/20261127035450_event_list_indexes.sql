-- Create index "event_workspace_id_actor_member_id_version" to table: "events"
CREATE INDEX "event_workspace_id_actor_member_id_version" ON "events" ("workspace_id", "actor_member_id", "version");
-- Create index "event_workspace_id_entity_id_version" to table: "events"
CREATE INDEX "event_workspace_id_entity_id_version" ON "events" ("workspace_id", "entity_id", "version");
-- Create index "event_workspace_id_kind_version" to table: "events"
CREATE INDEX "event_workspace_id_kind_version" ON "events" ("workspace_id", "kind", "version");
-- Create index "event_workspace_id_project_id_version" to table: "events"
CREATE INDEX "event_workspace_id_project_id_version" ON "events" ("workspace_id", "project_id", "version");
