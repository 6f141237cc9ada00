package core_test

// Webhook endpoints, administered: who may, what is valid, the bound per
// workspace, the cursor as of creation, update semantics, the delivery log
// and redelivery, and tenancy.

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

func TestUpdateWebhook(t *testing.T) {
	failing := clock.Add(-time.Hour)
	type state struct {
		url      string
		kinds    []string
		project  bool
		enabled  bool
		reason   string
		failures int
		failing  bool
		// cursorMoved: the cursor is the update's version, not the
		// creation's.
		cursorMoved bool
	}
	cases := []struct {
		name string
		// disabled and failures set the endpoint up as the engine may
		// leave it.
		disabled    string
		failures    int
		withProject bool
		in          func(f *fixture) core.WebhookUpdate
		want        state
		field       string
	}{
		{name: "nothing set", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{} },
			want: state{url: hookURL, enabled: true}},
		{name: "a new URL clears the failure record", failures: 3,
			in: func(*fixture) core.WebhookUpdate {
				return core.WebhookUpdate{URL: core.Some(" https://other.example.com/in ")}
			},
			want: state{url: "https://other.example.com/in", enabled: true}},
		{name: "the same URL keeps it", failures: 3,
			in:   func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{URL: core.Some(hookURL)} },
			want: state{url: hookURL, enabled: true, failures: 3, failing: true}},
		{name: "kinds", in: func(*fixture) core.WebhookUpdate {
			return core.WebhookUpdate{Kinds: core.Some([]string{"procedure.deleted"})}
		}, want: state{url: hookURL, kinds: []string{"procedure.deleted"}, enabled: true}},
		{name: "kinds null: all", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Kinds: core.Null[[]string]()} },
			want: state{url: hookURL, enabled: true}},
		{name: "project filter", in: func(f *fixture) core.WebhookUpdate {
			return core.WebhookUpdate{ProjectID: core.Some(f.project.ID.String())}
		}, want: state{url: hookURL, project: true, enabled: true}},
		{name: "project filter cleared", withProject: true, in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{ProjectID: core.Some("")} },
			want: state{url: hookURL, enabled: true}},
		{name: "disable", failures: 2, in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Enabled: core.Some(false)} },
			want: state{url: hookURL, reason: core.WebhookDisabledByAdmin, failures: 2, failing: true}},
		{name: "disable a disabled one keeps its reason", disabled: "failing for 3 days", failures: 9,
			in:   func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Enabled: core.Some(false)} },
			want: state{url: hookURL, reason: "failing for 3 days", failures: 9, failing: true}},
		{name: "re-enable clears the failure record and moves the cursor", disabled: "failing for 3 days", failures: 9,
			in:   func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Enabled: core.Some(true)} },
			want: state{url: hookURL, enabled: true, cursorMoved: true}},
		{name: "enable an enabled one changes nothing", failures: 2,
			in:   func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Enabled: core.Some(true)} },
			want: state{url: hookURL, enabled: true, failures: 2, failing: true}},
		{name: "url null", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{URL: core.Null[string]()} }, field: "url"},
		{name: "url invalid", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{URL: core.Some("ftp://x")} }, field: "url"},
		{name: "enabled null", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Enabled: core.Null[bool]()} }, field: "enabled"},
		{name: "kinds invalid", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{Kinds: core.Some([]string{"x"})} }, field: "kinds"},
		{name: "project not an id", in: func(*fixture) core.WebhookUpdate { return core.WebhookUpdate{ProjectID: core.Some("x")} }, field: "projectId"},
		{name: "no such project", in: func(*fixture) core.WebhookUpdate {
			return core.WebhookUpdate{ProjectID: core.Some(ids.New(ids.KindProject).String())}
		}, field: "projectId"},
	}
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				in := core.WebhookInput{}
				if c.withProject {
					in.ProjectID = strp(f.project.ID.String())
				}
				e, secret := f.newWebhook(t, in)
				set := db.Client.WebhookEndpoint.UpdateOneID(e.ID)
				if c.failures > 0 {
					set.SetConsecutiveFailures(c.failures).SetFailingSince(failing)
				}
				if c.disabled != "" {
					set.SetEnabled(false).SetDisabledReason(c.disabled)
				}
				if err := set.Exec(sys()); err != nil {
					t.Fatal(err)
				}
				f.newProcedure(t, "moves the version", "TODO", f.project)
				cursor := f.storedEndpoint(t, e.ID).Cursor

				got, err := f.svc.UpdateWebhook(f.admin, e.ID.String(), c.in(f))
				if c.field != "" {
					wantInvalid(t, err, c.field)
					return
				}
				if err != nil {
					t.Fatalf("UpdateWebhook: %v", err)
				}
				if got.Secret != "" {
					t.Fatal("the update shows the secret")
				}
				s := f.storedEndpoint(t, e.ID)
				kinds, err := core.WebhookKinds(s)
				if err != nil {
					t.Fatal(err)
				}
				have := state{url: s.URL, kinds: kindStrings(kinds), project: s.ProjectID != nil, enabled: s.Enabled,
					reason: s.DisabledReason, failures: s.ConsecutiveFailures, failing: s.FailingSince != nil}
				if c.want.cursorMoved {
					if version := f.version(t); s.Cursor != version || s.Cursor <= cursor {
						t.Fatalf("cursor %d (was %d); want the update's version %d", s.Cursor, cursor, version)
					}
				} else if s.Cursor != cursor {
					t.Fatalf("cursor moved from %d to %d", cursor, s.Cursor)
				}
				have.cursorMoved = c.want.cursorMoved
				if len(have.kinds) == 0 {
					have.kinds = nil
				}
				if fmt.Sprint(have) != fmt.Sprint(c.want) {
					t.Fatalf("stored %+v\nwant   %+v", have, c.want)
				}
				if s.Secret != secret {
					t.Fatal("the update changed the secret")
				}
			})
		}
		t.Run("not found before an invalid body", func(t *testing.T) {
			_, err := f.svc.UpdateWebhook(f.admin, ids.New(ids.KindWebhook).String(), core.WebhookUpdate{URL: core.Some("x")})
			wantCode(t, err, apperr.NotFound)
		})
	})
}

func TestDeleteAndRotateWebhook(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		ev := f.anEvent(t)
		gone, _ := f.newWebhook(t, core.WebhookInput{})
		kept, keptSecret := f.newWebhook(t, core.WebhookInput{})
		for i := range 3 {
			f.plantDelivery(t, gone, ev, clock.Add(time.Duration(i)*time.Second), webhookdelivery.StateSucceeded)
		}
		keptDelivery := f.plantDelivery(t, kept, ev, clock, webhookdelivery.StatePending)

		if err := f.svc.DeleteWebhook(f.admin, gone.ID.String()); err != nil {
			t.Fatalf("DeleteWebhook: %v", err)
		}
		if n := db.Client.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(gone.ID)).CountX(sys()); n != 0 {
			t.Fatalf("%d deliveries of the deleted endpoint remain", n)
		}
		if _, err := db.Client.WebhookDelivery.Get(sys(), keptDelivery.ID); err != nil {
			t.Fatalf("another endpoint's delivery went too: %v", err)
		}
		wantCode(t, f.svc.DeleteWebhook(f.admin, gone.ID.String()), apperr.NotFound)
		_, err := f.svc.Webhook(f.admin, gone.ID.String())
		wantCode(t, err, apperr.NotFound)

		rotated, err := f.svc.RotateWebhookSecret(f.admin, kept.ID.String())
		if err != nil {
			t.Fatalf("RotateWebhookSecret: %v", err)
		}
		if rotated == keptSecret || !strings.HasPrefix(rotated, core.WebhookSecretPrefix) {
			t.Fatalf("rotated %q from %q", rotated, keptSecret)
		}
		if s := f.storedEndpoint(t, kept.ID).Secret; s != rotated {
			t.Fatalf("stored secret %q; want the rotated %q", s, rotated)
		}
		_, err = f.svc.RotateWebhookSecret(f.admin, gone.ID.String())
		wantCode(t, err, apperr.NotFound)
		_, err = f.svc.RotateWebhookSecret(f.admin, "not-an-id")
		wantCode(t, err, apperr.NotFound)
	})
}

// TestWebhookDeliveriesPages pages an endpoint's delivery log newest first,
// forward and back, with ties on createdAt, and checks the totals.
func TestWebhookDeliveriesPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		ev := f.anEvent(t)
		e, _ := f.newWebhook(t, core.WebhookInput{})
		other, _ := f.newWebhook(t, core.WebhookInput{})
		f.plantDelivery(t, other, ev, clock, webhookdelivery.StatePending)
		var all []*ent.WebhookDelivery
		for i := range 7 {
			// Pairs share a createdAt: the id breaks the tie.
			all = append(all, f.plantDelivery(t, e, ev, clock.Add(time.Duration(i/2)*time.Minute), webhookdelivery.StateFailed))
		}
		slices.SortFunc(all, func(a, b *ent.WebhookDelivery) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID.String(), a.ID.String())
		})
		want := deliveryIDs(all)

		empty, err := f.svc.WebhookDeliveries(f.admin, e.ID.String(), core.Window{First: intp(0)})
		if err != nil || empty.Total != 7 || len(empty.Items) != 0 || !empty.PageInfo.HasNextPage {
			t.Fatalf("first 0: %+v, %v", empty, err)
		}
		for _, size := range []int{1, 3, 7, 10} {
			t.Run(fmt.Sprintf("forward by %d", size), func(t *testing.T) {
				var got []string
				w := core.Window{First: intp(size)}
				for pages := 0; ; pages++ {
					if pages > 10 {
						t.Fatal("paging does not end")
					}
					l, err := f.svc.WebhookDeliveries(f.admin, e.ID.String(), w)
					if err != nil {
						t.Fatal(err)
					}
					if l.Total != 7 {
						t.Fatalf("total %d; want 7", l.Total)
					}
					got = append(got, deliveryIDs(l.Items)...)
					if !l.PageInfo.HasNextPage {
						break
					}
					c := l.Cursor(l.Items[len(l.Items)-1])
					w = core.Window{First: intp(size), After: &c}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("paged\n%v\nwant\n%v", got, want)
				}
			})
			t.Run(fmt.Sprintf("backward by %d", size), func(t *testing.T) {
				var got []string
				w := core.Window{Last: intp(size)}
				for pages := 0; ; pages++ {
					if pages > 10 {
						t.Fatal("paging does not end")
					}
					l, err := f.svc.WebhookDeliveries(f.admin, e.ID.String(), w)
					if err != nil {
						t.Fatal(err)
					}
					got = append(deliveryIDs(l.Items), got...)
					if !l.PageInfo.HasPreviousPage {
						break
					}
					c := l.Cursor(l.Items[0])
					w = core.Window{Last: intp(size), Before: &c}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("paged back\n%v\nwant\n%v", got, want)
				}
			})
		}
		t.Run("by offset", func(t *testing.T) {
			l, err := f.svc.WebhookDeliveries(f.admin, e.ID.String(), core.Window{First: intp(2), Start: 4})
			if err != nil {
				t.Fatal(err)
			}
			if got := deliveryIDs(l.Items); !slices.Equal(got, want[4:6]) || !l.PageInfo.HasPreviousPage || !l.PageInfo.HasNextPage {
				t.Fatalf("page at 4: %v %+v; want %v", got, l.PageInfo, want[4:6])
			}
		})
		t.Run("the total follows the engine without a write", func(t *testing.T) {
			f.plantDelivery(t, e, ev, clock.Add(time.Hour), webhookdelivery.StatePending)
			l, err := f.svc.WebhookDeliveries(f.admin, e.ID.String(), core.Window{First: intp(1)})
			if err != nil {
				t.Fatal(err)
			}
			if l.Total != 8 {
				t.Fatalf("total %d after the engine queued one more; want 8", l.Total)
			}
		})
		t.Run("bad windows", func(t *testing.T) {
			l, err := f.svc.WebhookDeliveries(f.admin, other.ID.String(), core.Window{First: intp(1)})
			if err != nil {
				t.Fatal(err)
			}
			foreign := l.Cursor(l.Items[0])
			_, err = f.svc.WebhookDeliveries(f.admin, e.ID.String(), core.Window{After: &foreign})
			wantInvalid(t, err, "after")
			_, err = f.svc.WebhookDeliveries(f.admin, e.ID.String(), core.Window{First: intp(core.MaxListPageSize + 1)})
			wantInvalid(t, err, "first")
			_, err = f.svc.WebhookDeliveries(f.admin, ids.New(ids.KindWebhook).String(), core.Window{})
			wantCode(t, err, apperr.NotFound)
		})
	})
}

func intp(n int) *int { return &n }

func deliveryIDs(ds []*ent.WebhookDelivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID.String()
	}
	return out
}

func TestRedeliverWebhook(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "HOOK")
		ev := f.anEvent(t)
		e, _ := f.newWebhook(t, core.WebhookInput{})
		failed := f.plantDelivery(t, e, ev, clock.Add(-time.Hour), webhookdelivery.StateFailed)

		again, err := f.svc.RedeliverWebhook(f.admin, failed.ID.String())
		if err != nil {
			t.Fatalf("RedeliverWebhook: %v", err)
		}
		if again.ID == failed.ID || again.EndpointID != e.ID || again.EventID != ev.ID || again.EventVersion != ev.Version ||
			!again.Manual || again.State != webhookdelivery.StatePending || !again.NextAttemptAt.Equal(clock) || again.Attempts != 0 {
			t.Fatalf("redelivery %+v", again)
		}
		if d, err := db.Client.WebhookDelivery.Get(sys(), failed.ID); err != nil || d.State != webhookdelivery.StateFailed {
			t.Fatalf("the original delivery changed: %+v, %v", d, err)
		}
		// One pending redelivery of an event at a time.
		_, err = f.svc.RedeliverWebhook(f.admin, failed.ID.String())
		wantCode(t, err, apperr.Conflict)
		_, err = f.svc.RedeliverWebhook(f.admin, again.ID.String())
		wantCode(t, err, apperr.Conflict)
		// Once it was sent, another may be queued.
		if err := db.Client.WebhookDelivery.UpdateOneID(again.ID).SetState(webhookdelivery.StateSucceeded).Exec(sys()); err != nil {
			t.Fatal(err)
		}
		third, err := f.svc.RedeliverWebhook(f.admin, again.ID.String())
		if err != nil {
			t.Fatalf("redeliver after the redelivery was sent: %v", err)
		}
		if err := db.Client.WebhookDelivery.UpdateOneID(third.ID).SetState(webhookdelivery.StateFailed).Exec(sys()); err != nil {
			t.Fatal(err)
		}
		l, err := f.svc.WebhookDeliveries(f.admin, e.ID.String(), core.Window{})
		if err != nil || l.Total != 3 {
			t.Fatalf("delivery log after redeliveries: %+v, %v", l, err)
		}

		// Disabled: refused until re-enabled.
		if _, err := f.svc.UpdateWebhook(f.admin, e.ID.String(), core.WebhookUpdate{Enabled: core.Some(false)}); err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.RedeliverWebhook(f.admin, failed.ID.String())
		wantCode(t, err, apperr.Conflict)
		if _, err := f.svc.UpdateWebhook(f.admin, e.ID.String(), core.WebhookUpdate{Enabled: core.Some(true)}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.RedeliverWebhook(f.admin, failed.ID.String()); err != nil {
			t.Fatalf("redeliver after re-enabling: %v", err)
		}

		// Pruned: the event is gone.
		later := f.newProcedure(t, "later", "TODO", f.project)
		laterEvent, err := db.Client.Event.Query().Where(event.EntityID(later.ID)).Only(sys())
		if err != nil {
			t.Fatal(err)
		}
		pruned := f.plantDelivery(t, e, laterEvent, clock, webhookdelivery.StateFailed)
		if err := db.Client.Event.DeleteOneID(laterEvent.ID).Exec(sys()); err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.RedeliverWebhook(f.admin, pruned.ID.String())
		wantCode(t, err, apperr.NotFound)

		_, err = f.svc.RedeliverWebhook(f.admin, ids.New(ids.KindDelivery).String())
		wantCode(t, err, apperr.NotFound)
		_, err = f.svc.RedeliverWebhook(f.admin, e.ID.String()) // an endpoint's id names no delivery
		wantCode(t, err, apperr.NotFound)
	})
}

// TestWebhookTenancy: another workspace's endpoints and deliveries are not
// found, whatever the call, and its admin's list does not show them.
func TestWebhookTenancy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		a := setup(t, db, "AAA")
		b := setup(t, db, "BBB")
		e, secret := a.newWebhook(t, core.WebhookInput{})
		d := a.plantDelivery(t, e, a.anEvent(t), clock, webhookdelivery.StateFailed)
		id := e.ID.String()

		list, err := b.svc.Webhooks(b.admin)
		if err != nil || len(list) != 0 {
			t.Fatalf("B lists %d endpoints (%v); want none", len(list), err)
		}
		calls := []struct {
			name string
			call func() error
		}{
			{"Webhook", func() error { _, err := b.svc.Webhook(b.admin, id); return err }},
			{"UpdateWebhook", func() error {
				_, err := b.svc.UpdateWebhook(b.admin, id, core.WebhookUpdate{Enabled: core.Some(false)})
				return err
			}},
			{"UpdateWebhook with an invalid body", func() error {
				_, err := b.svc.UpdateWebhook(b.admin, id, core.WebhookUpdate{URL: core.Some("x")})
				return err
			}},
			{"RotateWebhookSecret", func() error { _, err := b.svc.RotateWebhookSecret(b.admin, id); return err }},
			{"WebhookDeliveries", func() error { _, err := b.svc.WebhookDeliveries(b.admin, id, core.Window{}); return err }},
			{"RedeliverWebhook", func() error { _, err := b.svc.RedeliverWebhook(b.admin, d.ID.String()); return err }},
			{"DeleteWebhook", func() error { return b.svc.DeleteWebhook(b.admin, id) }},
		}
		for _, c := range calls {
			t.Run(c.name, func(t *testing.T) { wantCode(t, c.call(), apperr.NotFound) })
		}
		s := a.storedEndpoint(t, e.ID)
		if !s.Enabled || s.Secret != secret {
			t.Fatalf("B's calls changed A's endpoint: enabled %v, secret changed %v", s.Enabled, s.Secret != secret)
		}
		if n := db.Client.WebhookDelivery.Query().CountX(sys()); n != 1 {
			t.Fatalf("%d deliveries; want A's one", n)
		}
	})
}
