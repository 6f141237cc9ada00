package core_test

// Webhook endpoints, administered: who may, what is valid, the bound per
// workspace, the cursor as of creation and the list order (updates,
// deliveries and tenancy: webhook_updates_test.go).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/egress/egresstest"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

const hookURL = "https://hooks.example.com/procsvc"

func (f *fixture) newWebhook(t *testing.T, in core.WebhookInput) (*ent.WebhookEndpoint, string) {
	t.Helper()
	if in.URL == "" {
		in.URL = hookURL
	}
	e, secret, err := f.svc.CreateWebhook(f.admin, in)
	if err != nil {
		t.Fatalf("CreateWebhook: %v", err)
	}
	return e, secret
}

// storedEndpoint reads an endpoint as stored, secret included.
func (f *fixture) storedEndpoint(t *testing.T, id uuid.UUID) *ent.WebhookEndpoint {
	t.Helper()
	e, err := f.db.Client.WebhookEndpoint.Get(sys(), id)
	if err != nil {
		t.Fatalf("read endpoint: %v", err)
	}
	return e
}

// anEvent is one event of f's workspace's log.
func (f *fixture) anEvent(t *testing.T) *ent.Event {
	t.Helper()
	ev, err := f.db.Client.Event.Query().Where(event.WorkspaceID(f.boot.Workspace.ID)).Order(event.ByVersion()).First(sys())
	if err != nil {
		t.Fatalf("read an event: %v", err)
	}
	return ev
}

// plantDelivery inserts a delivery of ev to e, as the engine would.
func (f *fixture) plantDelivery(t *testing.T, e *ent.WebhookEndpoint, ev *ent.Event, created time.Time, state webhookdelivery.State) *ent.WebhookDelivery {
	t.Helper()
	d, err := f.db.Client.WebhookDelivery.Create().SetWorkspaceID(e.WorkspaceID).SetEndpointID(e.ID).
		SetEventID(ev.ID).SetEventVersion(ev.Version).SetState(state).SetNextAttemptAt(created).
		SetCreatedAt(created).Save(sys())
	if err != nil {
		t.Fatalf("plant delivery: %v", err)
	}
	return d
}

func TestWebhookRoles(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		e, _ := f.newWebhook(t, core.WebhookInput{})
		d := f.plantDelivery(t, e, f.anEvent(t), clock, webhookdelivery.StateFailed)
		viewerCtx, _ := f.as(t, viewer.RoleViewer)
		memberCtx, _ := f.as(t, viewer.RoleMember)
		id := e.ID.String()

		calls := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"CreateWebhook", func(ctx context.Context) error {
				_, _, err := f.svc.CreateWebhook(ctx, core.WebhookInput{URL: hookURL})
				return err
			}},
			{"Webhooks", func(ctx context.Context) error { _, err := f.svc.Webhooks(ctx); return err }},
			{"Webhook", func(ctx context.Context) error { _, err := f.svc.Webhook(ctx, id); return err }},
			{"UpdateWebhook", func(ctx context.Context) error {
				_, err := f.svc.UpdateWebhook(ctx, id, core.WebhookUpdate{Enabled: core.Some(false)})
				return err
			}},
			{"RotateWebhookSecret", func(ctx context.Context) error { _, err := f.svc.RotateWebhookSecret(ctx, id); return err }},
			{"WebhookDeliveries", func(ctx context.Context) error {
				_, err := f.svc.WebhookDeliveries(ctx, id, core.Window{})
				return err
			}},
			{"RedeliverWebhook", func(ctx context.Context) error {
				_, err := f.svc.RedeliverWebhook(ctx, d.ID.String())
				return err
			}},
			{"DeleteWebhook", func(ctx context.Context) error { return f.svc.DeleteWebhook(ctx, id) }},
		}
		for _, c := range calls {
			t.Run(c.name, func(t *testing.T) {
				wantCode(t, c.call(context.Background()), apperr.Unauthenticated)
				wantCode(t, c.call(viewerCtx), apperr.Forbidden)
				wantCode(t, c.call(memberCtx), apperr.Forbidden)
			})
		}
		// Nothing the refused calls asked for happened.
		stored := f.storedEndpoint(t, e.ID)
		if !stored.Enabled || stored.URL != hookURL {
			t.Fatalf("endpoint changed by refused calls: %+v", stored)
		}
		if n := db.Client.WebhookEndpoint.Query().CountX(sys()); n != 1 {
			t.Fatalf("%d endpoints after refused creates; want 1", n)
		}
		if n := db.Client.WebhookDelivery.Query().CountX(sys()); n != 1 {
			t.Fatalf("%d deliveries after refused redeliveries; want 1", n)
		}
	})
}

func TestCreateWebhookValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		other := setup(t, db, "OTHER")
		project := f.project.ID.String()
		foreign := other.project.ID.String()
		missing := ids.New(ids.KindProject).String()
		notAnID := "nope"
		cases := []struct {
			name  string
			in    core.WebhookInput
			field string // "" when valid
		}{
			{"https", core.WebhookInput{URL: "https://hooks.example.com/in?x=1"}, ""},
			{"http with a port", core.WebhookInput{URL: "http://hooks.example.com:8443/in"}, ""},
			{"surrounding spaces are trimmed", core.WebhookInput{URL: "  https://hooks.example.com/in  "}, ""},
			{"a public IP literal", core.WebhookInput{URL: "http://[2606:4700::1111]:8080/"}, ""},
			{"every kind named once", core.WebhookInput{URL: hookURL, Kinds: []string{"procedure.created", "comment.deleted"}}, ""},
			{"a project filter", core.WebhookInput{URL: hookURL, ProjectID: &project}, ""},
			{"no URL", core.WebhookInput{}, "url"},
			{"only spaces", core.WebhookInput{URL: "   "}, "url"},
			{"relative", core.WebhookInput{URL: "/hooks"}, "url"},
			{"no scheme", core.WebhookInput{URL: "hooks.example.com/in"}, "url"},
			{"ftp", core.WebhookInput{URL: "ftp://hooks.example.com/in"}, "url"},
			{"javascript", core.WebhookInput{URL: "javascript:alert(1)"}, "url"},
			{"opaque", core.WebhookInput{URL: "http:hooks.example.com"}, "url"},
			{"no host", core.WebhookInput{URL: "https:///in"}, "url"},
			{"only a port", core.WebhookInput{URL: "https://:443/in"}, "url"},
			{"user and password", core.WebhookInput{URL: "https://user:pass@hooks.example.com/in"}, "url"},
			{"user only", core.WebhookInput{URL: "https://user@hooks.example.com/in"}, "url"},
			{"fragment", core.WebhookInput{URL: "https://hooks.example.com/in#top"}, "url"},
			{"empty fragment", core.WebhookInput{URL: "https://hooks.example.com/in#"}, "url"},
			{"port 0", core.WebhookInput{URL: "https://hooks.example.com:0/in"}, "url"},
			{"port too high", core.WebhookInput{URL: "https://hooks.example.com:65536/in"}, "url"},
			{"a space in the host", core.WebhookInput{URL: "https://hooks example.com/in"}, "url"},
			{"a NUL", core.WebhookInput{URL: "https://hooks.example.com/\x00"}, "url"},
			{"invalid UTF-8", core.WebhookInput{URL: "https://hooks.example.com/\xff"}, "url"},
			{"longest URL", core.WebhookInput{URL: longURL(core.MaxWebhookURLLen)}, ""},
			{"URL one byte too long", core.WebhookInput{URL: longURL(core.MaxWebhookURLLen + 1)}, "url"},
			{"unknown kind", core.WebhookInput{URL: hookURL, Kinds: []string{"procedure.created", "procedure.exploded"}}, "kinds"},
			{"kind in the wrong case", core.WebhookInput{URL: hookURL, Kinds: []string{"PROCEDURE.CREATED"}}, "kinds"},
			{"empty kind", core.WebhookInput{URL: hookURL, Kinds: []string{""}}, "kinds"},
			{"kind twice", core.WebhookInput{URL: hookURL, Kinds: []string{"comment.created", "comment.created"}}, "kinds"},
			{"project not an id", core.WebhookInput{URL: hookURL, ProjectID: &notAnID}, "projectId"},
			{"no such project", core.WebhookInput{URL: hookURL, ProjectID: &missing}, "projectId"},
			{"another workspace's project", core.WebhookInput{URL: hookURL, ProjectID: &foreign}, "projectId"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := db.Client.WebhookEndpoint.Query().CountX(sys())
				e, secret, err := f.svc.CreateWebhook(f.admin, c.in)
				if c.field != "" {
					wantInvalid(t, err, c.field)
					if after := db.Client.WebhookEndpoint.Query().CountX(sys()); after != before {
						t.Fatalf("a refused create stored an endpoint")
					}
					return
				}
				if err != nil {
					t.Fatalf("CreateWebhook: %v", err)
				}
				if e.URL != strings.TrimSpace(c.in.URL) || secret == "" {
					t.Fatalf("created %q with secret %q", e.URL, secret)
				}
				kinds, err := core.WebhookKinds(f.storedEndpoint(t, e.ID))
				if err != nil {
					t.Fatal(err)
				}
				if want := c.in.Kinds; !slices.Equal(kindStrings(kinds), want) && !(len(want) == 0 && len(kinds) == 0) {
					t.Fatalf("kinds = %v; want %v", kinds, want)
				}
				if err := f.svc.DeleteWebhook(f.admin, e.ID.String()); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

// TestWebhookAddressesRefused: registration (create, and an update's new
// URL) refuses every spelling of egresstest.Refused, validation_failed
// naming url with a message saying why, and stores nothing; public hosts
// are accepted without being resolved. A service with private addresses
// allowed (--webhook-allow-private-addresses) accepts loopback, private
// and local names, and still refuses a zone and a malformed address.
func TestWebhookAddressesRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "ADDR")
		existing, _ := f.newWebhook(t, core.WebhookInput{})
		for _, tc := range egresstest.Refused {
			raw := "http://" + tc.Authority + "/hook"
			before := f.storedEndpoint(t, existing.ID)
			count := db.Client.WebhookEndpoint.Query().CountX(sys())
			_, _, err := f.svc.CreateWebhook(f.admin, core.WebhookInput{URL: raw})
			wantRefusedURL(t, "create "+raw, err, tc.Says)
			_, err = f.svc.UpdateWebhook(f.admin, existing.ID.String(), core.WebhookUpdate{URL: core.Some(raw)})
			wantRefusedURL(t, "update to "+raw, err, tc.Says)
			if after := f.storedEndpoint(t, existing.ID); after.URL != before.URL || !after.UpdatedAt.Equal(before.UpdatedAt) ||
				db.Client.WebhookEndpoint.Query().CountX(sys()) != count {
				t.Fatalf("%s: a refused registration wrote (%q)", raw, after.URL)
			}
		}
		for _, authority := range egresstest.Accepted {
			e, _ := f.newWebhook(t, core.WebhookInput{URL: "https://" + authority + "/hook"})
			if err := f.svc.DeleteWebhook(f.admin, e.ID.String()); err != nil {
				t.Fatal(err)
			}
		}

		private := *f
		private.svc = core.New(db.Client, core.WithPrivateWebhookAddresses(true))
		for _, raw := range []string{"http://127.0.0.1:8080/", "http://[::1]/", "http://localhost/", "http://169.254.169.254/",
			"http://10.0.0.1/", "http://intranet/", "http://printer.local/"} {
			e, _ := private.newWebhook(t, core.WebhookInput{URL: raw})
			if err := private.svc.DeleteWebhook(f.admin, e.ID.String()); err != nil {
				t.Fatal(err)
			}
		}
		for _, raw := range []string{"http://[::1%25lo]:8080/", "http://[fe80::1%25eth0]/", "http://0x7f.1/", "http://2130706433/"} {
			_, _, err := private.svc.CreateWebhook(f.admin, core.WebhookInput{URL: raw})
			wantInvalid(t, err, "url")
		}
	})
}

// wantRefusedURL asserts err is validation_failed on url, its message
// saying says.
func wantRefusedURL(t *testing.T, what string, err error, says string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.ValidationFailed {
		t.Fatalf("%s: %v, want validation_failed", what, err)
	}
	for _, fe := range ae.Fields {
		if fe.Field == "url" && strings.Contains(fe.Message, says) {
			return
		}
	}
	t.Fatalf("%s: %v (fields %+v), want url refused saying %q", what, err, ae.Fields, says)
}

func longURL(n int) string {
	prefix := "https://hooks.example.com/"
	return prefix + strings.Repeat("a", n-len(prefix))
}

func kindStrings(ks []core.EventKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// TestWebhookBoundPerWorkspace fills a workspace up to the bound, the next
// endpoint is refused, and a delete makes room; another workspace's
// endpoints count apart. Concurrent creates near the bound stop exactly at
// it: the count is read under the write's lock.
func TestWebhookBoundPerWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		other := setup(t, db, "OTHER")
		other.newWebhook(t, core.WebhookInput{})
		var first *ent.WebhookEndpoint
		for i := range core.MaxWebhooksPerWorkspace - 3 {
			e, _ := f.newWebhook(t, core.WebhookInput{URL: fmt.Sprintf("%s/%d", hookURL, i)})
			if first == nil {
				first = e
			}
		}
		// The last 3 places, raced for by 8 creates.
		const racers = 8
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = f.svc.CreateWebhook(f.admin, core.WebhookInput{URL: hookURL})
			}()
		}
		wg.Wait()
		var created, refused int
		for _, err := range errs {
			switch apperr.CodeOf(err) {
			case "":
				created++
			case apperr.Conflict:
				refused++
			default:
				t.Fatalf("racing create: %v", err)
			}
		}
		if created != 3 || refused != racers-3 {
			t.Fatalf("racing creates: %d created, %d refused; want 3 and %d", created, refused, racers-3)
		}
		list, err := f.svc.Webhooks(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != core.MaxWebhooksPerWorkspace {
			t.Fatalf("%d endpoints listed; want %d", len(list), core.MaxWebhooksPerWorkspace)
		}
		_, _, err = f.svc.CreateWebhook(f.admin, core.WebhookInput{URL: hookURL})
		wantCode(t, err, apperr.Conflict)
		// A disabled endpoint still counts.
		if _, err := f.svc.UpdateWebhook(f.admin, first.ID.String(), core.WebhookUpdate{Enabled: core.Some(false)}); err != nil {
			t.Fatal(err)
		}
		_, _, err = f.svc.CreateWebhook(f.admin, core.WebhookInput{URL: hookURL})
		wantCode(t, err, apperr.Conflict)
		if err := f.svc.DeleteWebhook(f.admin, first.ID.String()); err != nil {
			t.Fatal(err)
		}
		f.newWebhook(t, core.WebhookInput{})
		// The other workspace is not affected by this one's count.
		other.newWebhook(t, core.WebhookInput{})
	})
}

// TestWebhookCursorAndSecret: a new endpoint's cursor is the version its
// creation committed, so it is sent every event committed later and none
// before; its secret is whsec_ and 32 random bytes, handed out once and
// never shown by reads.
func TestWebhookCursorAndSecret(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		f.newProcedure(t, "before", "TODO", f.project)
		before := f.version(t)
		e, secret := f.newWebhook(t, core.WebhookInput{})
		after := f.version(t)
		if after != before+1 || e.Cursor != after {
			t.Fatalf("cursor %d, versions %d before and %d after; want the version the creation committed", e.Cursor, before, after)
		}
		if last := f.lastEvent(t); last.Version > e.Cursor {
			t.Fatalf("event %s at version %d is past the new endpoint's cursor %d", last.Kind, last.Version, e.Cursor)
		}
		f.newProcedure(t, "after", "TODO", f.project)
		if last := f.lastEvent(t); last.Version <= e.Cursor {
			t.Fatalf("a later write's event is at version %d, not past the cursor %d", last.Version, e.Cursor)
		}

		raw, ok := strings.CutPrefix(secret, core.WebhookSecretPrefix)
		if !ok {
			t.Fatalf("secret %q lacks %q", secret, core.WebhookSecretPrefix)
		}
		if b, err := base64.RawURLEncoding.DecodeString(raw); err != nil || len(b) != 32 {
			t.Fatalf("secret %q is not base64url of 32 bytes (%v)", secret, err)
		}
		if got := f.storedEndpoint(t, e.ID).Secret; got != secret {
			t.Fatalf("stored secret %q; returned %q", got, secret)
		}
		_, second := f.newWebhook(t, core.WebhookInput{})
		if second == secret {
			t.Fatal("two endpoints got the same secret")
		}
		one, err := f.svc.Webhook(f.admin, e.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		list, err := f.svc.Webhooks(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		for _, shown := range append(list, one, e) {
			if shown.Secret != "" {
				t.Fatalf("endpoint %s shown with its secret", shown.ID)
			}
		}
		// No change-log event names an endpoint (docs/webhooks-admin.md).
		if n := db.Client.Event.Query().Where(event.EntityID(e.ID)).CountX(sys()); n != 0 {
			t.Fatalf("%d events logged for the endpoint", n)
		}
	})
}

func (f *fixture) lastEvent(t *testing.T) *ent.Event {
	t.Helper()
	ev, err := f.db.Client.Event.Query().Where(event.WorkspaceID(f.boot.Workspace.ID)).
		Order(event.ByVersion(entsql.OrderDesc())).First(sys())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestWebhooksNewestFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		var want []string
		for i := range 3 {
			e, _ := f.newWebhook(t, core.WebhookInput{URL: fmt.Sprintf("%s/%d", hookURL, i)})
			want = append(want, e.ID.String())
		}
		slices.Reverse(want)
		list, err := f.svc.Webhooks(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list {
			got = append(got, e.ID.String())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("listed %v; want newest first %v", got, want)
		}
	})
}
