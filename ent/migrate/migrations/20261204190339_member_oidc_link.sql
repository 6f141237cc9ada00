-- Modify "members" table
ALTER TABLE "members" ADD COLUMN "oidc_issuer" character varying NULL, ADD COLUMN "oidc_subject" character varying NULL;
-- Create index "member_email" to table: "members"
CREATE INDEX "member_email" ON "members" ("email");
-- Create index "member_oidc_issuer_oidc_subject" to table: "members"
CREATE INDEX "member_oidc_issuer_oidc_subject" ON "members" ("oidc_issuer", "oidc_subject");
-- Create index "member_workspace_id_oidc_issuer_oidc_subject" to table: "members"
CREATE UNIQUE INDEX "member_workspace_id_oidc_issuer_oidc_subject" ON "members" ("workspace_id", "oidc_issuer", "oidc_subject");
