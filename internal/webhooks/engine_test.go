package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// openTwice opens one fresh database of dialect twice, as two replicas
// would: two pools, two ent clients.
func openTwice(t *testing.T, dialect string) (a, b *database.DB) {
	t.Helper()
	url := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	if dialect == "postgres" {
		url = dbtest.CreatePostgres(t)
	}
	open := func() *database.DB {
		db, err := database.Open(context.Background(), url, database.Options{Prepare: dialect == "postgres", ProbeInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a = open()
	if err := a.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a, open()
}

// TestExactlyOnceAcrossTwoDispatchers: two dispatchers over two pools of
// one database, in small batches so that they contend for every endpoint
// and delivery, send each of 200 events to each of 3 endpoints exactly
// once, and queue exactly one delivery per endpoint and event.
func TestExactlyOnceAcrossTwoDispatchers(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			a, b := openTwice(t, dialect)
			f := setup(t, a)
			rc := newReceiver(t, nil)
			var eps []*ent.WebhookEndpoint
			for i := range 3 {
				eps = append(eps, f.endpoint(t, fmt.Sprintf("%s/%d", rc.URL, i), endpointOpts{}))
			}
			o := options()
			o.FanOutEndpoints, o.FanOutEvents, o.Held, o.Workers = 1, 7, 5, 4
			start(t, a, o)
			start(t, b, o)
			// Writes through both replicas.
			other := *f
			other.svc = core.New(b.Client)
			const n = 200
			for i := range n {
				w := f
				if i%2 == 1 {
					w = &other
				}
				w.categories(t, 1)
			}
			for _, ep := range eps {
				eventually(t, "every delivery settled", func() bool { return settled(t, a, ep, n) })
			}
			counts := map[string]int{}
			for _, g := range rc.received() {
				if g.verified != nil {
					t.Fatal(g.verified)
				}
				counts[g.endpoint+" "+g.eventID]++
			}
			if len(counts) != 3*n {
				t.Errorf("%d distinct (endpoint, event) received, want %d", len(counts), 3*n)
			}
			for k, c := range counts {
				if c != 1 {
					t.Errorf("%s received %d times", k, c)
				}
			}
			for _, ep := range eps {
				ds := deliveries(t, a, ep)
				seen := map[string]bool{}
				for _, d := range ds {
					if seen[d.EventID.String()] || d.State != webhookdelivery.StateSucceeded || d.Attempts != 1 {
						t.Fatalf("endpoint %s: %s", ep.URL, describe(ds))
					}
					seen[d.EventID.String()] = true
				}
				if len(ds) != n {
					t.Errorf("endpoint %s: %d deliveries, want %d", ep.URL, len(ds), n)
				}
			}
		})
	}
}

// TestSurvivesRestart: a dispatcher closed while deliveries are queued and
// being sent hands back what it had not started (no lease is left behind)
// and records what it had; another one, started afterwards, sends the
// rest: every event reaches the endpoint, and every delivery succeeds.
func TestSurvivesRestart(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		// After the fifth, requests wait at the gate until the first
		// dispatcher has handed back what it had not started: it is
		// closed with attempts under way and deliveries queued, however
		// fast or slow the machine.
		gate := make(chan struct{})
		var opened sync.Once
		open := func() { opened.Do(func() { close(gate) }) }
		t.Cleanup(open)
		rc := newReceiver(t, func(r *http.Request, n int) int {
			if n > 5 {
				select {
				case <-gate:
				case <-r.Context().Done():
				}
			}
			return http.StatusOK
		})
		ep := f.endpoint(t, rc.URL, endpointOpts{})
		const n = 60
		f.categories(t, n)
		o := options()
		o.Workers, o.PerEndpoint, o.PerWorkspace = 2, 2, 2
		first := webhooks.New(db.Client, db.Dialect, o)
		first.Start()
		eventually(t, "the first dispatcher sent some", func() bool { return len(rc.received()) > 5 })
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			first.Close()
		}()
		eventually(t, "the deliveries not started handed back", func() bool {
			leased, err := db.Client.WebhookDelivery.Query().Where(webhookdelivery.LeaseUntilNotNil()).Count(sys())
			return err == nil && leased <= o.Workers
		})
		open()
		<-closed
		sent := len(rc.received())
		if sent >= n {
			t.Fatalf("the first dispatcher sent all %d before it was closed: nothing to test", sent)
		}
		leased, err := db.Client.WebhookDelivery.Query().Where(webhookdelivery.LeaseUntilNotNil()).Count(sys())
		if err != nil || leased != 0 {
			t.Fatalf("after Close, %d deliveries still leased (%v)", leased, err)
		}
		start(t, db, o)
		eventually(t, "every delivery settled", func() bool { return settled(t, db, ep, n) })
		got := map[string]int{}
		for _, g := range rc.received() {
			got[g.eventID]++
		}
		ds := deliveries(t, db, ep)
		for _, d := range ds {
			if d.State != webhookdelivery.StateSucceeded || got[d.EventID.String()] == 0 {
				t.Fatalf("%s", describe(ds))
			}
		}
		if len(ds) != n || len(got) != n {
			t.Errorf("%d deliveries, %d events received; want %d", len(ds), len(got), n)
		}
	})
}

// TestLeaseOfACrashedReplicaExpires: deliveries leased by a replica that
// died before sending them are sent by another once the lease is over,
// and not before.
func TestLeaseOfACrashedReplicaExpires(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		rc := newReceiver(t, nil)
		ep := f.endpoint(t, rc.URL, endpointOpts{})
		f.categories(t, 3)
		// The crashed replica: it fanned out (leasing the deliveries to
		// itself) and never sent them.
		crashed := webhooks.New(db.Client, db.Dialect, options())
		if _, err := crashed.FanOutNow(sys()); err != nil {
			t.Fatal(err)
		}
		until := time.Now().UTC().Add(300 * time.Millisecond)
		n, err := db.Client.WebhookDelivery.Update().Where(webhookdelivery.EndpointID(ep.ID), webhookdelivery.LeaseUntilNotNil()).
			SetLeaseUntil(until).Save(sys())
		if err != nil || n != 3 {
			t.Fatalf("leased %d deliveries (%v), want the 3 the fan-out leased", n, err)
		}
		start(t, db, options())
		eventually(t, "every delivery settled", func() bool { return settled(t, db, ep, 3) })
		for _, g := range rc.received() {
			if g.at.Before(until) {
				t.Errorf("event %s sent at %s, before its lease ended at %s", g.eventID, g.at, until)
			}
		}
		if len(rc.received()) != 3 {
			t.Errorf("received %d, want 3", len(rc.received()))
		}
	})
}

// TestDisabledAfterSustainedFailure: an endpoint whose deliveries keep
// failing is disabled once it has failed for DisableAfter and at least
// DisableFailures times in a row, saying why; a disabled endpoint is
// fanned out no new event, and its pending deliveries are not claimed.
// An endpoint that recovers has its count reset.
func TestDisabledAfterSustainedFailure(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		down := newReceiver(t, func(*http.Request, int) int { return http.StatusBadGateway })
		flaky := newReceiver(t, func(_ *http.Request, n int) int {
			if n <= 2 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		epDown := f.endpoint(t, down.URL, endpointOpts{})
		epFlaky := f.endpoint(t, flaky.URL, endpointOpts{})
		f.categories(t, 1)
		o := options()
		o.Schedule = make([]time.Duration, 1000)
		for i := range o.Schedule {
			o.Schedule[i] = 5 * time.Millisecond
		}
		o.DisableAfter, o.DisableFailures = 200*time.Millisecond, 5
		d := start(t, db, o)
		eventually(t, "the failing endpoint disabled", func() bool {
			ep, err := db.Client.WebhookEndpoint.Get(sys(), epDown.ID)
			return err == nil && !ep.Enabled
		})
		eventually(t, "the flaky endpoint's delivery settled", func() bool { return settled(t, db, epFlaky, 1) })
		d.Close()
		ep, _ := db.Client.WebhookEndpoint.Get(sys(), epDown.ID)
		if ep.ConsecutiveFailures < 5 || ep.FailingSince == nil || time.Since(*ep.FailingSince) < 200*time.Millisecond ||
			!strings.Contains(ep.DisabledReason, "HTTP 502") || !strings.Contains(ep.DisabledReason, "200ms") {
			t.Errorf("disabled endpoint: failures %d since %v, reason %q", ep.ConsecutiveFailures, ep.FailingSince, ep.DisabledReason)
		}
		flakyEp, _ := db.Client.WebhookEndpoint.Get(sys(), epFlaky.ID)
		if !flakyEp.Enabled || flakyEp.ConsecutiveFailures != 0 || flakyEp.FailingSince != nil {
			t.Errorf("recovered endpoint: enabled %v, failures %d since %v", flakyEp.Enabled, flakyEp.ConsecutiveFailures, flakyEp.FailingSince)
		}
		// Its delivery still has retries left, and is due: no claim
		// takes it, and a new event is not queued for it.
		if _, err := db.Client.WebhookDelivery.Update().Where(webhookdelivery.EndpointID(epDown.ID)).
			SetNextAttemptAt(time.Now().UTC().Add(-time.Second)).Save(sys()); err != nil {
			t.Fatal(err)
		}
		f.categories(t, 1)
		idle := webhooks.New(db.Client, db.Dialect, o)
		if _, err := idle.FanOutNow(sys()); err != nil {
			t.Fatal(err)
		}
		if err := idle.ClaimNow(sys()); err != nil {
			t.Fatal(err)
		}
		ds := deliveries(t, db, epDown)
		if len(ds) != 1 || ds[0].State != webhookdelivery.StatePending || idle.Held() != 1 {
			// The one held is the flaky endpoint's new event.
			t.Errorf("held %d; disabled endpoint's deliveries: %s", idle.Held(), describe(ds))
		}
		if got := len(deliveries(t, db, epFlaky)); got != 2 {
			t.Errorf("the enabled endpoint has %d deliveries, want 2", got)
		}
		idle.Close()
	})
}

// TestAnswersRecorded: a redirect is a failure and is not followed; of an
// answer's body at most 1 KiB is recorded, as valid UTF-8 without NUL; a
// URL with credentials is not sent to.
func TestAnswersRecorded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		var elsewhere atomic.Int32
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
		defer target.Close()
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, http.StatusFound)
		}))
		defer redirect.Close()
		long := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := []byte(strings.Repeat("é", 100<<10))
			body[1], body[2], body[3] = 0xff, 0, 'x' // invalid UTF-8 and a NUL
			_, _ = w.Write(body)
		}))
		defer long.Close()
		epRedirect := f.endpoint(t, redirect.URL, endpointOpts{})
		epLong := f.endpoint(t, long.URL, endpointOpts{})
		// Registered past the admin API's check: refused as sent.
		epCreds := f.endpoint(t, strings.Replace(target.URL, "http://", "http://user:secret@", 1), endpointOpts{})
		f.categories(t, 1)
		o := options()
		o.Schedule = []time.Duration{}
		start(t, db, o)
		eventually(t, "all settled", func() bool {
			return settled(t, db, epRedirect, 1) && settled(t, db, epLong, 1) && settled(t, db, epCreds, 1)
		})
		if ds := deliveries(t, db, epCreds); ds[0].State != webhookdelivery.StateFailed || !strings.Contains(ds[0].Error, "user name") {
			t.Errorf("a URL with credentials: %s", describe(ds))
		}
		ds := deliveries(t, db, epRedirect)
		if d := ds[0]; d.State != webhookdelivery.StateFailed || *d.StatusCode != http.StatusFound || !strings.Contains(d.Error, "redirects are not followed") ||
			!strings.Contains(d.Error, target.URL) || elsewhere.Load() != 0 {
			t.Errorf("redirect: %s; the target was sent %d", describe(ds), elsewhere.Load())
		}
		ds = deliveries(t, db, epLong)
		if d := ds[0]; d.State != webhookdelivery.StateSucceeded || len(d.ResponseExcerpt) > webhooks.ExcerptBytes ||
			len(d.ResponseExcerpt) < webhooks.ExcerptBytes-8 || !utf8.ValidString(d.ResponseExcerpt) || strings.ContainsRune(d.ResponseExcerpt, 0) {
			t.Errorf("long answer: %d bytes recorded, valid %v: %.40q", len(d.ResponseExcerpt), utf8.ValidString(d.ResponseExcerpt), d.ResponseExcerpt)
		}
	})
}

// TestFilters: an endpoint is sent the kinds it names (all when none),
// and, with a project, only that project's events: its procedures, their
// comments (an edit or deletion of a comment, logged without a project,
// by its procedure's current project), the project itself.
func TestFilters(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		p0, p1 := f.projects[0].ID, f.projects[1].ID
		rc := newReceiver(t, nil)
		eps := map[string]*ent.WebhookEndpoint{
			"all":     f.endpoint(t, rc.URL+"/all", endpointOpts{}),
			"kinds":   f.endpoint(t, rc.URL+"/kinds", endpointOpts{kinds: []core.EventKind{core.EventProcedureCreated, core.EventCommentUpdated}}),
			"p0":      f.endpoint(t, rc.URL+"/p0", endpointOpts{project: &p0}),
			"p0 kind": f.endpoint(t, rc.URL+"/p0 kind", endpointOpts{project: &p0, kinds: []core.EventKind{core.EventCommentDeleted}}),
			"p1":      f.endpoint(t, rc.URL+"/p1", endpointOpts{project: &p1}),
		}
		a := f.procedure(t, f.projects[0], "A")
		b := f.procedure(t, f.projects[1], "B")
		ca, err := f.svc.AddComment(f.admin, a.ID.String(), "on A")
		must(t, err)
		_, err = f.svc.UpdateComment(f.admin, ca.ID.String(), "on A, edited")
		must(t, err)
		must(t, f.svc.DeleteComment(f.admin, ca.ID.String()))
		cb, err := f.svc.AddComment(f.admin, b.ID.String(), "on B")
		must(t, err)
		_, err = f.svc.UpdateComment(f.admin, cb.ID.String(), "on B, edited")
		must(t, err)
		f.categories(t, 1)
		_, err = f.svc.UpdateProject(f.admin, p0.String(), core.ProjectInput{Name: core.Some("Project 0, renamed")})
		must(t, err)
		const total = 9
		want := map[string][]string{
			"all":     {"procedure.created", "procedure.created", "comment.created", "comment.updated", "comment.deleted", "comment.created", "comment.updated", "category.created", "project.updated"},
			"kinds":   {"procedure.created", "procedure.created", "comment.updated", "comment.updated"},
			"p0":      {"procedure.created", "comment.created", "comment.updated", "comment.deleted", "project.updated"},
			"p0 kind": {"comment.deleted"},
			"p1":      {"procedure.created", "comment.created", "comment.updated"},
		}
		start(t, db, options())
		eventually(t, "every endpoint sent its events", func() bool {
			return len(rc.received()) == len(want["all"])+len(want["kinds"])+len(want["p0"])+len(want["p0 kind"])+len(want["p1"])
		})
		// Cursors advance past every event examined, matched or not.
		for name, ep := range eps {
			eventually(t, name+"'s cursor at the last event", func() bool {
				e, err := db.Client.WebhookEndpoint.Get(sys(), ep.ID)
				return err == nil && e.Cursor >= ep.Cursor+total
			})
		}
		got := map[string][]string{}
		for _, g := range rc.received() {
			name := strings.TrimPrefix(g.endpoint, "/")
			got[name] = append(got[name], g.eventType)
		}
		for name, kinds := range want {
			if !sameMultiset(got[name], kinds) {
				t.Errorf("%s was sent %v, want %v", name, got[name], kinds)
			}
		}
		if n, _ := db.Client.WebhookEndpoint.Query().Where(webhookendpoint.Enabled(true)).Count(sys()); n != len(eps) {
			t.Errorf("%d endpoints enabled", n)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sameMultiset(a, b []string) bool {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// TestWokenByCommits: with a poll too rare to matter, a commit's
// announcement (events.Hub.Observe, as the server wires it) or a value on
// Options.Wake has the event sent at once.
func TestWokenByCommits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		hub := events.NewHub(events.HubOptions{})
		defer hub.Close()
		f.svc = core.New(db.Client, core.WithAnnouncer(events.NewLocalAnnouncer(hub)))
		rc := newReceiver(t, nil)
		ep := f.endpoint(t, rc.URL, endpointOpts{})
		wake := make(chan struct{}, 1)
		o := options()
		o.PollInterval, o.Wake = time.Hour, wake
		d := start(t, db, o)
		hub.Observe(func(events.Notification) { d.Notify() })
		f.procedure(t, f.projects[0], "announced")
		eventually(t, "the event sent after its commit's announcement", func() bool { return settled(t, db, ep, 1) })
		// A write nobody announces, then a wake-up.
		f.svc = core.New(db.Client)
		f.categories(t, 1)
		wake <- struct{}{}
		eventually(t, "the event sent after a wake-up", func() bool { return settled(t, db, ep, 2) })
	})
}

// TestSlowEndpointKeepsItsShare: an endpoint that does not answer holds
// at most PerEndpoint of the workers; another endpoint's deliveries go on.
func TestSlowEndpointKeepsItsShare(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		stuck := make(chan struct{})
		slow := newReceiver(t, func(r *http.Request, n int) int {
			select {
			case <-stuck:
			case <-r.Context().Done():
			}
			return http.StatusOK
		})
		fast := newReceiver(t, nil)
		f.endpoint(t, slow.URL, endpointOpts{})
		epFast := f.endpoint(t, fast.URL, endpointOpts{})
		const n = 20
		f.categories(t, n)
		o := options()
		o.Workers, o.PerEndpoint, o.Timeout = 3, 1, time.Minute
		start(t, db, o)
		t.Cleanup(func() { close(stuck) }) // before the dispatcher's Close
		eventually(t, "the fast endpoint's deliveries settled", func() bool { return settled(t, db, epFast, n) })
		if got := len(slow.received()); got > 1 {
			t.Errorf("the slow endpoint was sent %d at once, want at most PerEndpoint (1)", got)
		}
	})
}

// TestPrune: deliveries created before the cutoff are deleted, in
// batches smaller than their number; later ones are kept.
func TestPrune(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		rc := newReceiver(t, nil)
		ep := f.endpoint(t, rc.URL, endpointOpts{})
		old := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Microsecond)
		var creates []*ent.WebhookDeliveryCreate
		for i := range 30 {
			at := old
			if i >= 25 {
				at = time.Now().UTC().Truncate(time.Microsecond)
			}
			creates = append(creates, db.Client.WebhookDelivery.Create().SetWorkspaceID(f.boot.Workspace.ID).SetEndpointID(ep.ID).
				SetEventID(ep.ID).SetEventVersion(int64(i)).SetNextAttemptAt(at).SetCreatedAt(at))
		}
		must(t, db.Client.WebhookDelivery.CreateBulk(creates...).Exec(sys()))
		n, err := webhooks.Prune(context.Background(), db.Client, time.Now().Add(-24*time.Hour), 10)
		if err != nil || n != 25 {
			t.Fatalf("pruned %d (%v), want 25", n, err)
		}
		if left := deliveries(t, db, ep); len(left) != 5 {
			t.Errorf("%d left, want the 5 recent ones", len(left))
		}
		d := webhooks.New(db.Client, db.Dialect, options())
		if pending, err := d.Pending(context.Background()); err != nil || pending != 5 {
			t.Errorf("pending: %d (%v), want 5", pending, err)
		}
	})
}

// TestClaimsWhenALaneRunsDry: deliveries a fan-out had no room to lease
// are claimed as soon as the endpoint's lane runs dry, not at the next
// poll (here, never).
func TestClaimsWhenALaneRunsDry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db)
		rc := newReceiver(t, nil)
		ep := f.endpoint(t, rc.URL, endpointOpts{})
		const n = 25
		f.categories(t, n)
		o := options()
		o.PollInterval, o.Held = time.Hour, 3
		d := start(t, db, o)
		d.Notify()
		eventually(t, "every delivery settled", func() bool { return settled(t, db, ep, n) })
		if got := len(rc.received()); got != n {
			t.Errorf("received %d, want %d", got, n)
		}
	})
}
