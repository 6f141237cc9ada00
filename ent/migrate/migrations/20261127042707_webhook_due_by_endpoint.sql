-- Create index "webhookdelivery_endpoint_id_state_next_attempt_at" to table: "webhook_deliveries"
CREATE INDEX "webhookdelivery_endpoint_id_state_next_attempt_at" ON "webhook_deliveries" ("endpoint_id", "state", "next_attempt_at");
-- Drop index "webhookdelivery_state_next_attempt_at" from table: "webhook_deliveries" (claims go endpoint by endpoint)
DROP INDEX "webhookdelivery_state_next_attempt_at";
