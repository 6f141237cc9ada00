package core

// Webhook endpoints, administered (docs/webhooks-admin.md): the URLs an
// admin registers to be sent the workspace's events, their filters, their
// signing secrets and their enabled state. internal/webhooks fans the
// change log out to them and sends; this file only keeps their rows.
//
// Every change to an endpoint runs in the workspace's write transaction
// (inTx), so that it is ordered with the writes whose events it filters: an
// endpoint's cursor set as of the lock is exact (every event at or below it
// has committed, none above it has), and a delete or a disable cannot
// interleave with a redelivery.
//
// No change to an endpoint appends a change-log event. The log is
// workspace data that every role reads and that every endpoint is sent;
// an endpoint's URL is often a credential itself (chat services put their
// token in the path), and the endpoint's state also changes outside writes
// (the engine's failure counts and auto-disable), so the log could not be
// its history anyway. The version still moves (inTx bumps it, as the token
// bookkeeping does without an event): readers of the log already see
// versions with no event, and caches keyed by the version drop what showed
// the endpoint.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/egress"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Bounds of webhook endpoints.
const (
	// MaxWebhookURLLen bounds an endpoint's URL, in bytes (the schema's
	// MaxLen of webhook_endpoints.url).
	MaxWebhookURLLen = 2048
	// MaxWebhooksPerWorkspace bounds the endpoints of one workspace,
	// enabled or not: registering one more is refused (conflict). Every
	// event is fanned out to each endpoint, so this bounds what one write
	// costs the delivery engine.
	MaxWebhooksPerWorkspace = 50
)

// WebhookSecretPrefix starts every signing secret: "whsec_" and the
// base64url (unpadded) of 32 random bytes.
const WebhookSecretPrefix = "whsec_"

// WebhookDisabledByAdmin is the disabled_reason of an endpoint an admin
// disabled (the engine writes its own reasons when it gives up on one).
const WebhookDisabledByAdmin = "disabled by an admin"

// WithPrivateWebhookAddresses lets webhook URLs name loopback, private
// and other non-public addresses and hosts (the server's
// --webhook-allow-private-addresses, which lets deliveries connect to
// them): by default registration refuses them (egress.CheckHost).
func WithPrivateWebhookAddresses(allow bool) Option {
	return func(s *Service) { s.privateWebhooks = allow }
}

// WebhookInput registers an endpoint: URL is required; Kinds are the event
// kinds sent (empty: all); ProjectID, when set, sends only the events of
// that project.
type WebhookInput struct {
	URL       string
	Kinds     []string
	ProjectID *string
}

// WebhookUpdate changes the fields set: URL (not null), Kinds (null or
// empty: all), ProjectID (null or "": no project filter), Enabled (not
// null).
type WebhookUpdate struct {
	URL       Optional[string]
	Kinds     Optional[[]string]
	ProjectID Optional[string]
	Enabled   Optional[bool]
}

// CheckWebhookURL is the rule an endpoint's URL passes when it is
// registered (validWebhookURL), for what brings endpoints in from elsewhere:
// a workspace archive's import, with the server's
// --webhook-allow-private-addresses as allowPrivate.
// Errors: validation_failed (url).
func CheckWebhookURL(s string, allowPrivate bool) error {
	val := &apperr.Validation{}
	validWebhookURL(val, "url", s, allowPrivate)
	return val.Err()
}

// validWebhookURL checks an endpoint's URL, trimmed: an absolute http or
// https URL with a host (and a valid port, when it names one), no user
// name or password (credentials belong in the signature's secret, not in a
// URL that lists show), no fragment (never sent), at most
// MaxWebhookURLLen bytes, and a host the one rule of what procsvc connects
// to accepts (egress.CheckHost: no zone, and unless allowPrivate no
// non-public address however written, nor localhost or another name of the
// server's own network). A name is not resolved here (docs/webhooks.md,
// "What procsvc connects to"): internal/webhooks checks every address it
// resolves to when it connects, at each send.
func validWebhookURL(val *apperr.Validation, field, s string, allowPrivate bool) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		val.Add(field, "is required")
		return s
	case !storable(val, field, s):
		return s
	case len(s) > MaxWebhookURLLen:
		val.Add(field, "must be at most %d bytes", MaxWebhookURLLen)
		return s
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Opaque != "" || (u.Scheme != "http" && u.Scheme != "https") {
		val.Add(field, "must be an absolute http or https URL")
		return s
	}
	if u.Hostname() == "" {
		val.Add(field, "must name a host")
	} else if err := egress.CheckHost(u.Hostname(), allowPrivate); err != nil {
		val.Add(field, "%s", err.Error())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			val.Add(field, "must have a port between 1 and 65535")
		}
	}
	if u.User != nil {
		val.Add(field, "must not contain a user name or password")
	}
	if strings.Contains(s, "#") {
		val.Add(field, "must not have a fragment")
	}
	return s
}

// validWebhookKinds checks an endpoint's kinds (each one of EventKinds, no
// duplicates; empty: all) and returns them as the JSON array stored.
func validWebhookKinds(val *apperr.Validation, field string, kinds []string) string {
	var unknown, repeated []string
	seen := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		switch {
		case !ValidEventKind(EventKind(k)):
			unknown = append(unknown, strconv.Quote(k))
		case seen[k]:
			repeated = append(repeated, strconv.Quote(k))
		}
		seen[k] = true
	}
	// Name a few: the list may be as long as the request allows.
	few := func(xs []string) string { return strings.Join(xs[:min(len(xs), 3)], ", ") }
	if len(unknown) > 0 {
		val.Add(field, "%s is not an event kind; the kinds are %s", few(unknown), joinValues(EventKinds))
	}
	if len(repeated) > 0 {
		val.Add(field, "lists %s more than once", few(repeated))
	}
	if len(kinds) == 0 {
		return "[]"
	}
	raw, _ := json.Marshal(kinds) // strings always marshal
	return string(raw)
}

// WebhookKinds are the event kinds e is sent (none: all).
func WebhookKinds(e *ent.WebhookEndpoint) ([]EventKind, error) {
	var kinds []EventKind
	if err := json.Unmarshal([]byte(e.Kinds), &kinds); err != nil {
		return nil, err
	}
	return kinds, nil
}

// newWebhookSecret returns a fresh signing secret.
func newWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return WebhookSecretPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// checkProject refuses, as of the write's lock, a project filter naming no
// project of the workspace.
func checkProject(ctx context.Context, tx *ent.Tx, id uuid.UUID) error {
	ok, err := tx.Project.Query().Where(project.ID(id)).Exist(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.Invalid("projectId", "no such project in this workspace")
	}
	return nil
}

// withoutSecret blanks e's secret: only CreateWebhook and
// RotateWebhookSecret hand it out, as a value of its own, so that no
// rendering of an endpoint can show it by mistake.
func withoutSecret(e *ent.WebhookEndpoint) *ent.WebhookEndpoint {
	if e != nil {
		e.Secret = ""
	}
	return e
}

// CreateWebhook registers an endpoint and returns it with its signing
// secret, which is shown only this once (RotateWebhookSecret makes a new
// one). Its cursor is the workspace's version as of the write's lock: it is
// sent the events committed after its creation, never earlier ones.
// Errors: unauthenticated, forbidden, validation_failed (url, kinds,
// projectId), conflict (MaxWebhooksPerWorkspace reached).
func (s *Service) CreateWebhook(ctx context.Context, in WebhookInput) (*ent.WebhookEndpoint, string, error) {
	v, err := require(ctx, viewer.RoleAdmin)
	if err != nil {
		return nil, "", err
	}
	val := &apperr.Validation{}
	address := validWebhookURL(val, "url", in.URL, s.privateWebhooks)
	kinds := validWebhookKinds(val, "kinds", in.Kinds)
	var projectID *uuid.UUID
	if in.ProjectID != nil {
		projectID = optionalID(val, "projectId", *in.ProjectID)
	}
	if err := val.Err(); err != nil {
		return nil, "", err
	}
	secret, err := newWebhookSecret()
	if err != nil {
		return nil, "", apperr.Map(err)
	}
	created, err := stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.WebhookEndpoint, error) {
		n, err := tx.WebhookEndpoint.Query().Count(ctx)
		if err != nil {
			return nil, err
		}
		if n >= MaxWebhooksPerWorkspace {
			return nil, apperr.New(apperr.Conflict, "a workspace may have at most %d webhook endpoints; delete one first", MaxWebhooksPerWorkspace)
		}
		if projectID != nil {
			if err := checkProject(ctx, tx, *projectID); err != nil {
				return nil, err
			}
		}
		return tx.WebhookEndpoint.Create().SetURL(address).SetKinds(kinds).SetNillableProjectID(projectID).
			SetSecret(secret).SetCursor(me.WorkspaceVersion).Save(ctx)
	})
	if err != nil {
		return nil, "", err
	}
	return withoutSecret(created), secret, nil
}

// Webhooks lists the workspace's endpoints, newest first (at most
// MaxWebhooksPerWorkspace; secrets are never shown).
// Errors: unauthenticated, forbidden.
func (s *Service) Webhooks(ctx context.Context) ([]*ent.WebhookEndpoint, error) {
	if _, err := require(ctx, viewer.RoleAdmin); err != nil {
		return nil, err
	}
	es, err := s.client.WebhookEndpoint.Query().
		Order(webhookendpoint.ByCreatedAt(sql.OrderDesc()), webhookendpoint.ByID(sql.OrderDesc())).All(ctx)
	for _, e := range es {
		withoutSecret(e)
	}
	return es, apperr.Map(err)
}

// Webhook returns one endpoint (its secret is never shown).
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) Webhook(ctx context.Context, id string) (*ent.WebhookEndpoint, error) {
	_, eid, err := target(ctx, viewer.RoleAdmin, ids.KindWebhook, "webhook endpoint", id)
	if err != nil {
		return nil, err
	}
	return endpoint(ctx, s.client, eid, false)
}

// endpoint reads an endpoint through c (the client, or a write's
// tx.Client() to read it as of the workspace lock), without its secret.
// With lock, on PostgreSQL, the read also locks its row until commit: the
// delivery engine, which changes an endpoint's cursor and failure record
// outside the workspace's lock, locks the row too, so neither overwrites
// the other with what it read before.
// Errors: not_found.
func endpoint(ctx context.Context, c *ent.Client, id uuid.UUID, lock bool) (*ent.WebhookEndpoint, error) {
	q := c.WebhookEndpoint.Query().Where(webhookendpoint.ID(id))
	if lock {
		q.Modify(func(s *sql.Selector) {
			if s.Dialect() == dialect.Postgres {
				s.For(sql.LockUpdate)
			}
		})
	}
	e, err := q.Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFoundf("webhook endpoint")
	}
	if err != nil {
		return nil, apperr.Map(err)
	}
	return withoutSecret(e), nil
}

// UpdateWebhook changes the fields set in in. A changed filter (kinds,
// project) applies to the events fanned out from then on; deliveries
// already queued are sent as they are.
//
//   - A new URL starts with a clean failure record (consecutive failures
//     and failingSince cleared): the failures were another receiver's.
//   - Disabling stops deliveries and records WebhookDisabledByAdmin as the
//     reason (an endpoint already disabled keeps its reason).
//   - Re-enabling clears the reason and the failure record, and moves the
//     cursor up to the workspace's version as of the lock: the endpoint is
//     sent the events committed from then on, not those committed while it
//     was disabled (the change log keeps them; RedeliverWebhook resends
//     any delivered before).
//
// Errors: unauthenticated, forbidden, not_found, validation_failed (url,
// kinds, projectId, enabled).
func (s *Service) UpdateWebhook(ctx context.Context, id string, in WebhookUpdate) (*ent.WebhookEndpoint, error) {
	v, eid, err := target(ctx, viewer.RoleAdmin, ids.KindWebhook, "webhook endpoint", id)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	newURL, hasURL := required(val, "url", in.URL)
	if hasURL {
		newURL = validWebhookURL(val, "url", newURL, s.privateWebhooks)
	}
	var kinds string
	if in.Kinds.Set {
		var list []string
		if in.Kinds.Value != nil {
			list = *in.Kinds.Value
		}
		kinds = validWebhookKinds(val, "kinds", list)
	}
	projectID := clearableID(val, "projectId", in.ProjectID)
	enabled, hasEnabled := required(val, "enabled", in.Enabled)
	if err := val.Err(); err != nil {
		// An endpoint that does not exist is not_found whatever the body.
		if _, nf := endpoint(ctx, s.client, eid, false); nf != nil {
			return nil, nf
		}
		return nil, err
	}
	updated, err := stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.WebhookEndpoint, error) {
		e, err := endpoint(ctx, tx.Client(), eid, true)
		if err != nil {
			return nil, err
		}
		u := tx.WebhookEndpoint.UpdateOneID(e.ID)
		if hasURL && newURL != e.URL {
			u.SetURL(newURL).SetConsecutiveFailures(0).ClearFailingSince()
		}
		if in.Kinds.Set {
			u.SetKinds(kinds)
		}
		if projectID.Set && projectID.Value != nil {
			if err := checkProject(ctx, tx, *projectID.Value); err != nil {
				return nil, err
			}
		}
		setOrClear(projectID, u.SetProjectID, u.ClearProjectID)
		switch {
		case !hasEnabled || enabled == e.Enabled:
		case enabled:
			u.SetEnabled(true).SetDisabledReason("").SetConsecutiveFailures(0).ClearFailingSince()
			if e.Cursor < me.WorkspaceVersion {
				u.SetCursor(me.WorkspaceVersion)
			}
		default:
			u.SetEnabled(false).SetDisabledReason(WebhookDisabledByAdmin)
		}
		return u.Save(ctx)
	})
	return withoutSecret(updated), err
}

// DeleteWebhook removes an endpoint and its delivery log. The endpoint's
// row goes first: its DELETE waits for a sender or fan-out holding the row
// (see endpoint), and the deliveries' DELETE, a later statement, then sees
// the rows that one committed.
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) DeleteWebhook(ctx context.Context, id string) error {
	v, eid, err := target(ctx, viewer.RoleAdmin, ids.KindWebhook, "webhook endpoint", id)
	if err != nil {
		return err
	}
	return s.inTx(ctx, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) error {
		n, err := tx.WebhookEndpoint.Delete().Where(webhookendpoint.ID(eid)).Exec(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.NotFoundf("webhook endpoint")
		}
		_, err = tx.WebhookDelivery.Delete().Where(webhookdelivery.EndpointID(eid)).Exec(ctx)
		return err
	})
}

// RotateWebhookSecret replaces an endpoint's signing secret and returns the
// new one, shown only this once. The old one stops at once: every attempt
// from the commit on, retries of earlier deliveries included, is signed
// with the new one (the engine signs at each attempt).
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) RotateWebhookSecret(ctx context.Context, id string) (string, error) {
	v, eid, err := target(ctx, viewer.RoleAdmin, ids.KindWebhook, "webhook endpoint", id)
	if err != nil {
		return "", err
	}
	secret, err := newWebhookSecret()
	if err != nil {
		return "", apperr.Map(err)
	}
	err = s.inTx(ctx, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) error {
		if _, err := endpoint(ctx, tx.Client(), eid, true); err != nil {
			return err
		}
		return tx.WebhookEndpoint.UpdateOneID(eid).SetSecret(secret).Exec(ctx)
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// WebhookDeliveryList is one page of an endpoint's delivery log and how
// many deliveries it holds.
type WebhookDeliveryList = List[ent.WebhookDelivery]

// WebhookDeliveries returns the page w selects of an endpoint's delivery
// log, newest first (createdAt, then id, descending), with its exact total.
// The engine adds and updates deliveries outside writes, without moving
// the workspace's version, so the total is counted on every call rather
// than cached per version as other lists' are.
// Errors: unauthenticated, forbidden, not_found, validation_failed naming
// the argument.
func (s *Service) WebhookDeliveries(ctx context.Context, endpointID string, w Window) (*WebhookDeliveryList, error) {
	_, eid, err := target(ctx, viewer.RoleAdmin, ids.KindWebhook, "webhook endpoint", endpointID)
	if err != nil {
		return nil, err
	}
	k := keyset[ent.WebhookDelivery]{
		scope:  scopeOf("webhookDeliveries", eid.String()),
		column: webhookdelivery.FieldCreatedAt,
		desc:   true,
		key:    func(d *ent.WebhookDelivery) any { return d.CreatedAt },
		id:     func(d *ent.WebhookDelivery) uuid.UUID { return d.ID },
	}
	sl, err := k.plan(w, DefaultListPageSize, MaxListPageSize)
	if err != nil {
		return nil, err
	}
	if _, err := endpoint(ctx, s.client, eid, false); err != nil {
		return nil, err
	}
	total, err := s.client.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(eid)).Count(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	var rows []*ent.WebhookDelivery
	if total > 0 && sl.offset < total {
		rows, err = s.client.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(eid)).
			Where(where[predicate.WebhookDelivery](&sl)...).Order(orderBy[webhookdelivery.OrderOption](&sl)).
			Offset(sl.offset).Limit(sl.limit).All(ctx)
		if err != nil {
			return nil, apperr.Map(err)
		}
	}
	out := &WebhookDeliveryList{Total: total, cursor: k.cursor}
	out.Items, out.PageInfo = k.finish(sl, rows)
	if out.Items == nil {
		out.Items = []*ent.WebhookDelivery{}
	}
	return out, nil
}

// RedeliverWebhook queues the event of a delivery again, to the same
// endpoint, as a new delivery (manual, due now), and returns it; the
// delivery it copies is left as it is. Refused while the endpoint is
// disabled (re-enable it first: a disabled endpoint is sent nothing), while
// a redelivery of the same event to it is still pending (at most one at a
// time: repeated clicks queue one send), and once retention has pruned the
// event (its body can no longer be rendered).
// Errors: unauthenticated, forbidden, not_found (the delivery, or its
// event), conflict.
func (s *Service) RedeliverWebhook(ctx context.Context, deliveryID string) (*ent.WebhookDelivery, error) {
	v, did, err := target(ctx, viewer.RoleAdmin, ids.KindDelivery, "webhook delivery", deliveryID)
	if err != nil {
		return nil, err
	}
	return stored(ctx, s, v, viewer.RoleAdmin, func(tx *ent.Tx, me *viewer.Viewer) (*ent.WebhookDelivery, error) {
		d, err := tx.WebhookDelivery.Get(ctx, did)
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("webhook delivery")
		}
		if err != nil {
			return nil, err
		}
		e, err := endpoint(ctx, tx.Client(), d.EndpointID, true)
		if err != nil {
			return nil, err
		}
		if !e.Enabled {
			return nil, apperr.New(apperr.Conflict, "the webhook endpoint is disabled; enable it before redelivering")
		}
		if ok, err := tx.Event.Query().Where(event.ID(d.EventID)).Exist(ctx); err != nil || !ok {
			if err == nil {
				err = apperr.New(apperr.NotFound, "the event of this delivery was pruned by retention and cannot be sent again")
			}
			return nil, err
		}
		pending, err := tx.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(e.ID), webhookdelivery.EventID(d.EventID),
			webhookdelivery.Manual(true), webhookdelivery.StateEQ(webhookdelivery.StatePending)).Exist(ctx)
		if err != nil {
			return nil, err
		}
		if pending {
			return nil, apperr.New(apperr.Conflict, "a redelivery of this event to this endpoint is already pending")
		}
		return tx.WebhookDelivery.Create().SetEndpointID(e.ID).SetEventID(d.EventID).SetEventVersion(d.EventVersion).
			SetManual(true).SetNextAttemptAt(s.now()).Save(ctx)
	})
}
