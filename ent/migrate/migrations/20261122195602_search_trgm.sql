-- Case-insensitive substring search (ILIKE '%term%') on procedures' name,
-- content and shortId is served by trigram GIN indexes. Written by hand: ent's
-- schema cannot express operator classes per dialect, and SQLite needs none.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX "procedure_name_trgm" ON "procedures" USING GIN ("name" gin_trgm_ops);
CREATE INDEX "procedure_content_trgm" ON "procedures" USING GIN ("content" gin_trgm_ops);
CREATE INDEX "procedure_short_id_trgm" ON "procedures" USING GIN ("short_id" gin_trgm_ops);
