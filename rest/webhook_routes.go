package rest

// The webhook endpoints (docs/api.md, "Webhooks"): an admin's endpoints,
// their signing secrets and their delivery logs, through the same resolvers
// as GraphQL's webhooks, createWebhook, … (graph/webhooks.resolvers.go).
// Every one needs the ADMIN role (core answers forbidden otherwise). None
// of their answers is cached (graph/webhook_entries.go says why), and the answers
// holding a secret are never kept for an Idempotency-Key's replay
// (auth.HoldsSecret).

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/middleware"
)

// Webhook is an endpoint as every webhook answer shows it; its secret is
// not part of it.
type Webhook struct {
	ID                  string   `json:"id"`
	URL                 string   `json:"url"`
	Kinds               []string `json:"kinds"`
	ProjectID           *string  `json:"projectId"`
	Enabled             bool     `json:"enabled"`
	DisabledReason      string   `json:"disabledReason"`
	ConsecutiveFailures int      `json:"consecutiveFailures"`
	FailingSince        *Time    `json:"failingSince"`
	CreatedAt           Time     `json:"createdAt"`
	UpdatedAt           Time     `json:"updatedAt"`
}

// WebhookWithSecret is the answer of POST /webhooks and POST
// /webhooks/{id}/secret, the only two that show the signing secret.
type WebhookWithSecret struct {
	Webhook
	Secret string `json:"secret"`
}

// WebhookDelivery is one entry of an endpoint's delivery log.
type WebhookDelivery struct {
	ID              string `json:"id"`
	EndpointID      string `json:"endpointId"`
	EventID         string `json:"eventId"`
	EventVersion    int64  `json:"eventVersion"`
	State           string `json:"state"`
	Attempts        int    `json:"attempts"`
	NextAttemptAt   Time   `json:"nextAttemptAt"`
	StatusCode      *int   `json:"statusCode"`
	LatencyMs       *int64 `json:"latencyMs"`
	ResponseExcerpt string `json:"responseExcerpt"`
	Error           string `json:"error"`
	Manual          bool   `json:"manual"`
	CreatedAt       Time   `json:"createdAt"`
	DeliveredAt     *Time  `json:"deliveredAt"`
}

// CursorList is the List envelope of a list paged by cursor: meta also
// carries the cursor of the page's last item while more follow (send it as
// after for the next page), null on the last page.
type CursorList[T any] struct {
	Data []T        `json:"data"`
	Meta CursorMeta `json:"meta"`
}

// CursorMeta is a CursorList's total and next page.
type CursorMeta struct {
	Total      int     `json:"total"`
	NextCursor *string `json:"nextCursor"`
}

func webhookShape(e *ent.WebhookEndpoint) (Webhook, error) {
	kinds, err := core.WebhookKinds(e)
	if err != nil {
		return Webhook{}, err
	}
	out := Webhook{ID: e.ID.String(), URL: e.URL, Kinds: names(kinds), Enabled: e.Enabled,
		DisabledReason: e.DisabledReason, ConsecutiveFailures: e.ConsecutiveFailures, FailingSince: timePtr(e.FailingSince),
		CreatedAt: Time(e.CreatedAt), UpdatedAt: Time(e.UpdatedAt)}
	if e.ProjectID != nil {
		id := e.ProjectID.String()
		out.ProjectID = &id
	}
	return out, nil
}

func webhookDeliveryShape(d *ent.WebhookDelivery) WebhookDelivery {
	return WebhookDelivery{ID: d.ID.String(), EndpointID: d.EndpointID.String(), EventID: d.EventID.String(),
		EventVersion: d.EventVersion, State: string(d.State), Attempts: d.Attempts, NextAttemptAt: Time(d.NextAttemptAt),
		StatusCode: d.StatusCode, LatencyMs: d.LatencyMs, ResponseExcerpt: d.ResponseExcerpt, Error: d.Error,
		Manual: d.Manual, CreatedAt: Time(d.CreatedAt), DeliveredAt: timePtr(d.DeliveredAt)}
}

// writeWebhook answers e with status, or err.
func writeWebhook(w http.ResponseWriter, status int, e *ent.WebhookEndpoint, err error) error {
	if err != nil {
		return err
	}
	shape, err := webhookShape(e)
	if err != nil {
		return err
	}
	return middleware.WriteJSON(w, status, shape)
}

// writeSecret answers p, an endpoint with its new secret, with status.
func writeSecret(w http.ResponseWriter, status int, p *model.WebhookSecretPayload, err error) error {
	if err != nil {
		return err
	}
	shape, err := webhookShape(p.Webhook)
	if err != nil {
		return err
	}
	return middleware.WriteJSON(w, status, WebhookWithSecret{Webhook: shape, Secret: p.Secret})
}

// noQuery refuses every query parameter: the endpoint takes none.
func noQuery(r *http.Request) error { return newParams(r.URL.Query()).finish() }

// unconditional refuses an If-Match other than "*": webhook writes are not
// conditional (endpoints carry no ETag), and ignoring a precondition the
// client asked for would write what it meant to guard.
func unconditional(r *http.Request) error {
	if h := strings.TrimSpace(r.Header.Get("If-Match")); h != "" && h != "*" {
		return apperr.Invalid("If-Match", "is not supported here: webhook writes are not conditional")
	}
	return nil
}

// stringList decodes a field holding a list of strings: absent, null, or
// an array of strings (a null element is refused, as GraphQL refuses it).
func (b *body) stringList(name string) graphql.Omittable[[]string] {
	raw, ok := b.field(name)
	if !ok {
		return graphql.Omittable[[]string]{}
	}
	if isNull(raw) {
		return graphql.OmittableOf[[]string](nil)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		b.val.Add(name, "must be a list of strings")
		return graphql.Omittable[[]string]{}
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if isNull(e) {
			b.val.Add(name, "must not contain null")
			return graphql.Omittable[[]string]{}
		}
		if err := json.Unmarshal(e, &out[i]); err != nil {
			b.val.Add(name, "must be a list of strings")
			return graphql.Omittable[[]string]{}
		}
	}
	return graphql.OmittableOf(out)
}

// webhookReadOnly are fields of the Webhook shape a client may send back
// unchanged; they are ignored.
var webhookReadOnly = []string{"id", "disabledReason", "consecutiveFailures", "failingSince", "createdAt", "updatedAt"}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	in := model.CreateWebhookInput{URL: deref(value(b.str("url"))), ProjectID: value(b.str("projectId"))}
	in.Kinds, _ = b.stringList("kinds").ValueOK()
	if err := b.finish(); err != nil {
		return err
	}
	p, err := a.r.Mutation().CreateWebhook(r.Context(), in)
	return writeSecret(w, http.StatusCreated, p, err)
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	es, err := a.r.Query().Webhooks(r.Context())
	if err != nil {
		return err
	}
	out := List[Webhook]{Data: make([]Webhook, len(es)), Meta: Meta{Total: len(es)}}
	for i, e := range es {
		if out.Data[i], err = webhookShape(e); err != nil {
			return err
		}
	}
	return ok(w, out)
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	e, err := a.r.Query().Webhook(r.Context(), r.PathValue("id"))
	return writeWebhook(w, http.StatusOK, e, err)
}

func (a *API) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := unconditional(r); err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	b.ignore(webhookReadOnly...)
	in := model.UpdateWebhookInput{URL: b.str("url"), Kinds: b.stringList("kinds"), ProjectID: b.str("projectId"), Enabled: b.boolean("enabled")}
	if err := b.finish(); err != nil {
		return err
	}
	e, err := a.r.Mutation().UpdateWebhook(r.Context(), r.PathValue("id"), in)
	return writeWebhook(w, http.StatusOK, e, err)
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := unconditional(r); err != nil {
		return err
	}
	if _, err := a.r.Mutation().DeleteWebhook(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	p, err := a.r.Mutation().RotateWebhookSecret(r.Context(), r.PathValue("id"))
	return writeSecret(w, http.StatusOK, p, err)
}

// listWebhookDeliveries answers a page of an endpoint's delivery log,
// newest first, by cursor rather than page number: the delivery engine
// adds entries at the head of the log all the time, so an offset would
// repeat entries from one page to the next.
func (a *API) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	p := newParams(r.URL.Query())
	limit := p.integer(core.DefaultListPageSize, 1, core.MaxListPageSize, "limit", "pageSize", "perPage")
	window := core.Window{First: &limit}
	if after, ok := p.get("after"); ok {
		c := core.Cursor(after)
		window.After = &c
	}
	if err := p.finish(); err != nil {
		return err
	}
	list, err := a.r.WebhookDeliveryPage(r.Context(), r.PathValue("id"), window)
	if err != nil {
		return err
	}
	out := CursorList[WebhookDelivery]{Data: make([]WebhookDelivery, len(list.Items)), Meta: CursorMeta{Total: list.Total}}
	for i, d := range list.Items {
		out.Data[i] = webhookDeliveryShape(d)
	}
	if n := len(list.Items); n > 0 && list.PageInfo.HasNextPage {
		next := string(list.Cursor(list.Items[n-1]))
		out.Meta.NextCursor = &next
	}
	return ok(w, out)
}

// redeliverWebhookDelivery answers 202 Accepted with the new delivery: the
// request is accepted for sending, which happens later (its state says how
// it went), as GitHub's redelivery answers.
func (a *API) redeliverWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	d, err := a.r.Mutation().RedeliverWebhookDelivery(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return middleware.WriteJSON(w, http.StatusAccepted, webhookDeliveryShape(d))
}
