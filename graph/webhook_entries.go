package graph

// Webhook endpoints (webhooks.graphqls): the entries both faces share and
// the conversions of their arguments. The rules are core's
// (internal/core/webhook_endpoints.go); docs/api.md, "Webhooks", has them.

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/respcache"
)

// Reads of endpoints and their delivery logs are never kept by the response
// cache (docs/caching.md): the delivery engine changes an endpoint's failure
// record and enabled state, and adds and updates deliveries, without moving
// the workspace's version, so an answer cached until the next write could
// show a delivery log or a failure count that has moved on. Every read entry
// below vetoes caching for its request, GraphQL's and REST's alike.

// WebhookPage returns the workspace's endpoints (at most
// core.MaxWebhooksPerWorkspace).
func (r *Resolver) WebhookPage(ctx context.Context) ([]*ent.WebhookEndpoint, error) {
	respcache.MarkUncacheable(ctx)
	return r.Service.Webhooks(ctx)
}

// WebhookByID returns the endpoint id names.
func (r *Resolver) WebhookByID(ctx context.Context, id string) (*ent.WebhookEndpoint, error) {
	respcache.MarkUncacheable(ctx)
	return r.Service.Webhook(ctx, id)
}

// WebhookDeliveryPage returns the page w selects of the delivery log of the
// endpoint endpointID names, newest first, with its exact total: what
// WebhookEndpoint.deliveries shows, and REST's list by cursor.
func (r *Resolver) WebhookDeliveryPage(ctx context.Context, endpointID string, w core.Window) (*core.WebhookDeliveryList, error) {
	respcache.MarkUncacheable(ctx)
	return r.Service.WebhookDeliveries(ctx, endpointID, w)
}

// RotatedWebhook replaces the signing secret of the endpoint id names and
// returns the endpoint as it now is, with the new secret. The endpoint is
// read after the rotation committed (core answers the secret only), so it
// shows the rotation's updatedAt.
func (r *Resolver) RotatedWebhook(ctx context.Context, id string) (*model.WebhookSecretPayload, error) {
	secret, err := r.Service.RotateWebhookSecret(ctx, id)
	if err != nil {
		return nil, err
	}
	e, err := r.Service.Webhook(ctx, id)
	if err != nil {
		return nil, err
	}
	return &model.WebhookSecretPayload{Webhook: e, Secret: secret}, nil
}

// webhookInput converts createWebhook's input.
func webhookInput(in model.CreateWebhookInput) core.WebhookInput {
	return core.WebhookInput{URL: in.URL, Kinds: in.Kinds, ProjectID: in.ProjectID}
}

// webhookUpdate converts updateWebhook's input: each field absent, null or
// given, as core.WebhookUpdate distinguishes them.
func webhookUpdate(in model.UpdateWebhookInput) core.WebhookUpdate {
	return core.WebhookUpdate{URL: optional(in.URL), Kinds: optionalList(in.Kinds),
		ProjectID: optional(in.ProjectID), Enabled: optional(in.Enabled)}
}

// optionalList converts an omittable list field (gqlgen carries a list as
// a slice, null as a nil one).
func optionalList[T any](o graphql.Omittable[[]T]) core.Optional[[]T] {
	v, ok := o.ValueOK()
	switch {
	case !ok:
		return core.Optional[[]T]{}
	case v == nil:
		return core.Null[[]T]()
	}
	return core.Some(v)
}

// webhookKinds are the event kinds e is sent, as strings (none: all).
func webhookKinds(e *ent.WebhookEndpoint) ([]string, error) {
	kinds, err := core.WebhookKinds(e)
	if err != nil {
		return nil, err
	}
	return stringsOf(kinds), nil
}

// webhookDeliveryConnection is the connection of a page of deliveries.
func webhookDeliveryConnection(ctx context.Context, list *core.WebhookDeliveryList) *model.WebhookDeliveryConnection {
	edges, info := connection(ctx, list, func(n *ent.WebhookDelivery, c string) *model.WebhookDeliveryEdge {
		return &model.WebhookDeliveryEdge{Node: n, Cursor: c}
	})
	return &model.WebhookDeliveryConnection{Edges: edges, Nodes: list.Items, PageInfo: info, TotalCount: list.Total}
}
