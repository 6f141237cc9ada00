-- Modify "workspaces" table
ALTER TABLE "workspaces" ADD COLUMN "events_pruned_to" bigint NOT NULL DEFAULT 0;
-- Create "events" table
CREATE TABLE "events" ("id" uuid NOT NULL, "workspace_id" uuid NOT NULL, "version" bigint NOT NULL, "kind" character varying NOT NULL, "entity_id" uuid NOT NULL, "procedure_id" uuid NULL, "project_id" uuid NULL, "actor_member_id" uuid NULL, "actor_token_id" uuid NULL, "created_at" timestamptz NOT NULL, "changes" jsonb NOT NULL, "facets" jsonb NULL, PRIMARY KEY ("id"));
-- Create index "event_created_at" to table: "events"
CREATE INDEX "event_created_at" ON "events" ("created_at");
-- Create index "event_workspace_id_procedure_id_version" to table: "events"
CREATE INDEX "event_workspace_id_procedure_id_version" ON "events" ("workspace_id", "procedure_id", "version");
-- Create index "event_workspace_id_version" to table: "events"
CREATE UNIQUE INDEX "event_workspace_id_version" ON "events" ("workspace_id", "version");
-- Create "webhook_deliveries" table
CREATE TABLE "webhook_deliveries" ("id" uuid NOT NULL, "workspace_id" uuid NOT NULL, "endpoint_id" uuid NOT NULL, "event_id" uuid NOT NULL, "event_version" bigint NOT NULL, "state" character varying NOT NULL DEFAULT 'pending', "attempts" bigint NOT NULL DEFAULT 0, "next_attempt_at" timestamptz NOT NULL, "lease_until" timestamptz NULL, "status_code" bigint NULL, "latency_ms" bigint NULL, "response_excerpt" character varying NOT NULL DEFAULT '', "error" character varying NOT NULL DEFAULT '', "manual" boolean NOT NULL DEFAULT false, "created_at" timestamptz NOT NULL, "delivered_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "webhookdelivery_created_at" to table: "webhook_deliveries"
CREATE INDEX "webhookdelivery_created_at" ON "webhook_deliveries" ("created_at");
-- Create index "webhookdelivery_endpoint_id_created_at" to table: "webhook_deliveries"
CREATE INDEX "webhookdelivery_endpoint_id_created_at" ON "webhook_deliveries" ("endpoint_id", "created_at");
-- Create index "webhookdelivery_state_next_attempt_at" to table: "webhook_deliveries"
CREATE INDEX "webhookdelivery_state_next_attempt_at" ON "webhook_deliveries" ("state", "next_attempt_at");
-- Create "webhook_endpoints" table
CREATE TABLE "webhook_endpoints" ("id" uuid NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "workspace_id" uuid NOT NULL, "url" character varying NOT NULL, "kinds" jsonb NOT NULL DEFAULT '[]', "project_id" uuid NULL, "secret" character varying NOT NULL, "enabled" boolean NOT NULL DEFAULT true, "disabled_reason" character varying NOT NULL DEFAULT '', "cursor" bigint NOT NULL DEFAULT 0, "consecutive_failures" bigint NOT NULL DEFAULT 0, "failing_since" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "webhookendpoint_workspace_id_created_at" to table: "webhook_endpoints"
CREATE INDEX "webhookendpoint_workspace_id_created_at" ON "webhook_endpoints" ("workspace_id", "created_at");
