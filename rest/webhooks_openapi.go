package rest

// The webhook endpoints in the OpenAPI document (webhook_routes.go): their
// schemas and operations, merged into the document by Document.

import (
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/core"
)

// allSchemas are the document's component schemas: schemas() and the
// webhooks'.
func allSchemas() obj {
	all := schemas()
	for name, s := range webhookSchemas() {
		all[name] = s
	}
	return all
}

// webhookSecret is a signing secret: core.WebhookSecretPrefix and the
// base64url of 32 bytes.
var webhookSecret = obj{"type": "string", "pattern": "^" + core.WebhookSecretPrefix + "[A-Za-z0-9_-]{43}$",
	"description": "the HMAC-SHA256 key of the deliveries' signatures; shown only in this answer: store it now"}

func webhookSchemas() obj {
	eventKinds := obj{"type": "array", "uniqueItems": true, "items": enum(core.EventKinds...)}
	webhookProps := func() obj {
		return obj{
			"id": uuidStr, "url": described(obj{"type": "string", "maxLength": core.MaxWebhookURLLen}, "an absolute http or https URL"),
			"kinds":     described(eventKinds, "the event kinds sent; empty: every kind"),
			"projectId": described(nullable(uuidStr), "when set, only the events of this project are sent"),
			"enabled":   boolean,
			"disabledReason": described(obj{"type": "string"},
				"why it is disabled (by an admin, or by the sender after repeated failures); empty while enabled"),
			"consecutiveFailures": obj{"type": "integer", "minimum": 0},
			"failingSince":        nullable(timestamp),
			"createdAt":           timestamp, "updatedAt": timestamp,
		}
	}
	withSecret := webhookProps()
	withSecret["secret"] = webhookSecret
	deliveryProps := obj{
		"id": uuidStr, "endpointId": uuidStr, "eventId": uuidStr,
		"eventVersion":    obj{"type": "integer", "minimum": 1},
		"state":           enum(webhookdelivery.StateValues()...),
		"attempts":        obj{"type": "integer", "minimum": 0},
		"nextAttemptAt":   described(timestamp, "when a pending delivery is next due"),
		"statusCode":      described(nullable(obj{"type": "integer"}), "the last attempt's HTTP status; null when it got no response"),
		"latencyMs":       nullable(obj{"type": "integer", "minimum": 0}),
		"responseExcerpt": described(obj{"type": "string"}, "the first bytes of the last response's body"),
		"error":           described(obj{"type": "string"}, "why the last attempt got no response; empty when it got one"),
		"manual":          described(obj{"type": "boolean"}, "queued by a redelivery"),
		"createdAt":       timestamp, "deliveredAt": nullable(timestamp),
	}
	anyRO := obj{"description": "read-only; accepted and ignored so that GET-modify-PUT round trips work"}
	update := obj{"url": str, "kinds": described(nullable(eventKinds), "null or empty: every kind"),
		"projectId": described(nullable(str), `null or "": no project filter`), "enabled": boolean}
	for _, n := range webhookReadOnly {
		update[n] = anyRO
	}
	webhook := webhookProps()
	return obj{
		"Webhook":           object(keys(webhook), webhook),
		"WebhookWithSecret": object(keys(withSecret), withSecret),
		"WebhookList": object([]string{"data", "meta"}, obj{
			"data": obj{"type": "array", "maxItems": core.MaxWebhooksPerWorkspace, "items": ref("Webhook")},
			"meta": object([]string{"total"}, obj{"total": obj{"type": "integer", "minimum": 0}}),
		}),
		"WebhookDelivery": object(keys(deliveryProps), deliveryProps),
		"WebhookDeliveryList": object([]string{"data", "meta"}, obj{
			"data": obj{"type": "array", "items": ref("WebhookDelivery")},
			"meta": object([]string{"total", "nextCursor"}, obj{
				"total":      obj{"type": "integer", "minimum": 0},
				"nextCursor": described(nullable(str), "send it as after for the next page; null on the last page"),
			}),
		}),
		"CreateWebhook": object([]string{"url"}, obj{"url": str, "kinds": described(nullable(eventKinds), "absent, null or empty: every kind"),
			"projectId": nullable(str)}),
		"UpdateWebhook": object(nil, update),
	}
}

func webhookOperations() map[string]operation {
	size := wholeNumber(core.DefaultListPageSize, 1, core.MaxListPageSize)
	deliveries := []any{
		query("limit", "page size, in decimal digits", size), query("pageSize", "alias of limit", size), query("perPage", "alias of limit", size),
		query("after", "the meta.nextCursor of the previous page", str),
	}
	admin := []string{"400", "401", "403"}
	one := []string{"400", "401", "403", "404"}
	write := []string{"400", "401", "403", "404", "413", "415"}
	return map[string]operation{
		"POST /webhooks":                          {"Register a webhook endpoint (ADMIN); the answer holds its signing secret, once", nil, "CreateWebhook", "WebhookWithSecret", []string{"400", "401", "403", "413", "415"}, false},
		"GET /webhooks":                           {"List the webhook endpoints, newest first (ADMIN)", nil, "", "WebhookList", admin, false},
		"GET /webhooks/{id}":                      {"Get a webhook endpoint (ADMIN)", nil, "", "Webhook", one, false},
		"PUT /webhooks/{id}":                      {"Update a webhook endpoint (only the fields sent; ADMIN)", nil, "UpdateWebhook", "Webhook", write, false},
		"DELETE /webhooks/{id}":                   {"Delete a webhook endpoint and its delivery log (ADMIN)", nil, "", "", one, false},
		"POST /webhooks/{id}/secret":              {"Rotate a webhook endpoint's signing secret (ADMIN); the answer holds the new one, once", nil, "", "WebhookWithSecret", one, false},
		"GET /webhooks/{id}/deliveries":           {"List a webhook endpoint's deliveries, newest first, by cursor (ADMIN)", deliveries, "", "WebhookDeliveryList", one, false},
		"POST /webhook-deliveries/{id}/redeliver": {"Queue a delivery's event again, as a new delivery (ADMIN); 202: it is sent later, as its state will tell", nil, "", "WebhookDelivery", one, false},
	}
}
