-- Modify "idempotency_keys" table
ALTER TABLE "idempotency_keys" ADD COLUMN "commits" bigint NOT NULL DEFAULT 0;
