-- Modify "members" table
ALTER TABLE "members" ADD COLUMN "oidc_unlinked_issuer" character varying NULL, ADD COLUMN "oidc_unlinked_subject" character varying NULL;
