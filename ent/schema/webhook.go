package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"github.com/procsvc/procsvc/internal/ids"
)

// WebhookEndpoint is a URL an admin registered to be sent a workspace's
// events (internal/webhooks, docs/api.md "Webhooks"). Its cursor is the
// log version up to which its deliveries have been queued: the log is the
// outbox, and a write never touches this table.
type WebhookEndpoint struct{ ent.Schema }

// Mixin of the WebhookEndpoint.
func (WebhookEndpoint) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}, TimeMixin{}} }

// Fields of the WebhookEndpoint.
func (WebhookEndpoint) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindWebhook)).Default(ids.Generator(ids.KindWebhook)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.String("url").MaxLen(2048),
		field.Text("kinds").SchemaType(jsonb).Default("[]").Comment("JSON array of the event kinds sent; empty: all"),
		field.UUID("project_id", ids.New(ids.KindProject)).Optional().Nillable().Comment("only events of this project, when set"),
		field.String("secret").Sensitive().Comment("the HMAC-SHA256 key of the signatures, whsec_…"),
		field.Bool("enabled").Default(true),
		field.String("disabled_reason").Default(""),
		field.Int64("cursor").Default(0).Comment("deliveries are queued for the events up to this version"),
		field.Int("consecutive_failures").Default(0),
		field.Time("failing_since").Optional().Nillable().Comment("the first failure since the last success"),
	}
}

// Indexes of the WebhookEndpoint.
func (WebhookEndpoint) Indexes() []ent.Index {
	return []ent.Index{index.Fields("workspace_id", "created_at")}
}

// WebhookDelivery is one event to be sent, or sent, to one endpoint, and
// the outcome of its last attempt: the endpoint's delivery log. A manual
// redelivery is a new row for the same event.
type WebhookDelivery struct{ ent.Schema }

// Mixin of the WebhookDelivery.
func (WebhookDelivery) Mixin() []ent.Mixin { return []ent.Mixin{TenantMixin{}} }

// Fields of the WebhookDelivery.
func (WebhookDelivery) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", ids.New(ids.KindDelivery)).Default(ids.Generator(ids.KindDelivery)).Immutable(),
		field.UUID("workspace_id", ids.New(ids.KindWorkspace)).Immutable(),
		field.UUID("endpoint_id", ids.New(ids.KindWebhook)).Immutable(),
		field.UUID("event_id", ids.New(ids.KindEvent)).Immutable(),
		field.Int64("event_version").Immutable(),
		field.Enum("state").Values("pending", "succeeded", "failed").Default("pending"),
		field.Int("attempts").Default(0),
		field.Time("next_attempt_at").Comment("when a pending delivery is due"),
		field.Time("lease_until").Optional().Nillable().Comment("a replica sending it holds it until then"),
		field.Int("status_code").Optional().Nillable().Comment("the last attempt's HTTP status"),
		field.Int64("latency_ms").Optional().Nillable(),
		field.String("response_excerpt").Default("").Comment("the first bytes of the last response's body"),
		field.String("error").Default("").Comment("why the last attempt failed, when it got no response"),
		field.Bool("manual").Default(false).Comment("queued by a redelivery"),
		field.Time("created_at").Default(nowUTC).Immutable(),
		field.Time("delivered_at").Optional().Nillable(),
	}
}

// Indexes of the WebhookDelivery: an endpoint's due ones (internal/webhooks
// claims them endpoint by endpoint, so that one endpoint's backlog is never
// scanned to reach another's; an index on the state alone would be one
// more to rewrite at each outcome), an endpoint's log, and the retention's
// scan.
func (WebhookDelivery) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("endpoint_id", "state", "next_attempt_at"),
		index.Fields("endpoint_id", "created_at"),
		index.Fields("created_at"),
	}
}
