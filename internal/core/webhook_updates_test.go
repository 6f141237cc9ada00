package core_test

// Webhook endpoints, administered: update semantics, deletion and secret
// rotation, the delivery log and redelivery, and tenancy.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
)

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
