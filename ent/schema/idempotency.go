package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
)

// IdempotencyKey records one write sent with an Idempotency-Key header
// (internal/idempotency): claimed, in state in_progress, before the write
// runs; each write transaction of the execution counts itself in commits,
// in that transaction; then the row is completed with the response to
// replay, or deleted when the write failed in a way a retry may overcome and
// nothing committed. Rows expire after a day and are
// purged in the background. The workspace is a plain column, not an edge:
// the rows are bookkeeping, deleted by their expiry.
type IdempotencyKey struct{ ent.Schema }

// Mixin of the IdempotencyKey.
func (IdempotencyKey) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the IdempotencyKey.
func (IdempotencyKey) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.String("key").Immutable().MaxLen(255).Comment("the Idempotency-Key header, 1-255 printable ASCII characters"),
		field.String("fingerprint").Comment("hex SHA-256 of the member, method, path with query, and body"),
		field.Enum("state").Values("in_progress", "completed"),
		field.String("owner").Comment("random id of the execution that claimed the row: completing or releasing it is conditional on it"),
		field.Time("locked_at").Comment("when the execution in progress started; an older one than the lock timeout is abandoned"),
		field.Time("expires_at"),
		field.Int("status").Optional().Comment("the response's HTTP status, once completed"),
		field.String("content_type").Default("").Comment("the response's Content-Type header"),
		field.String("etag").Default("").Comment("the response's ETag header"),
		field.Bytes("body").Optional().Comment("the response's body, byte for byte"),
		field.Int("stored_bytes").Default(0).Comment("the bytes of body counted in the workspace's IdempotencyBudget, given back when the row expires"),
		field.Int("commits").Default(0).Comment("how many write transactions of the execution that holds the row committed: each adds one in its own transaction, so the key's record commits with the write"),
		field.Time("created_at").Default(nowUTC).Immutable(),
	}
}

// Indexes of the IdempotencyKey: one row per (workspace, key), claimed by
// its INSERT; expires_at serves the purge.
func (IdempotencyKey) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("workspace_id", "key").Unique(),
		index.Fields("expires_at"),
	}
}

// IdempotencyBudget is the running total of the response bytes a
// workspace's IdempotencyKeys keep for replay (their stored_bytes), bounded
// by the server's per-workspace budget (internal/idempotency): a response
// is kept only if the total stays within it, and an expired key gives its
// bytes back when it is purged or taken over. One row per workspace, so
// that checking the budget never sums the keys.
type IdempotencyBudget struct{ ent.Schema }

// Mixin of the IdempotencyBudget.
func (IdempotencyBudget) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the IdempotencyBudget.
func (IdempotencyBudget) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable().Unique(),
		field.Int64("used_bytes").Default(0).Comment("the sum of the stored_bytes of the workspace's idempotency keys"),
	}
}
