package webhooks_test

// Sharing a replica between workspaces: one workspace's endpoints that
// hang, its backlog and its large events leave the others' deliveries
// their workers, their room to be leased and their bytes
// (docs/webhooks.md, "Sharing a replica").

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// hangingReceiver answers nothing until the test ends (or the client
// gives up): it counts the requests it holds at once, the most it held,
// and those that ended.
type hangingReceiver struct {
	*httptest.Server
	mu                     sync.Mutex
	holding, most, started int
	stop                   chan struct{}
	once                   sync.Once
}

// newHangingReceiver starts one; release (a cleanup registered after the
// dispatcher's, so that it runs before its Close) ends what it holds.
func newHangingReceiver(t *testing.T) *hangingReceiver {
	h := &hangingReceiver{stop: make(chan struct{})}
	stop := h.stop
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.holding++
		h.started++
		h.most = max(h.most, h.holding)
		h.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
		h.mu.Lock()
		h.holding--
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	t.Cleanup(h.release) // before Close
	return h
}

func (h *hangingReceiver) release() { h.once.Do(func() { close(h.stop) }) }

func (h *hangingReceiver) counts() (holding, most, started int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holding, h.most, h.started
}

// events appends n events to f's workspace's log, as writes do, in one
// transaction.
func (f *fixture) events(t testing.TB, n int) {
	t.Helper()
	batch := make([]uuid.UUID, n)
	for i := range batch {
		batch[i] = ids.New(ids.KindEvent)
	}
	if err := appendEvents(f.db, f.boot.Workspace.ID, batch, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
		t.Fatal(err)
	}
}

// TestHangingNeighbour: the review's case. Workspace B has 50 endpoints
// that never answer (within a timeout of a minute: no attempt of B's ends
// during the test) and 5 000 deliveries queued for them; workspace A's
// event, committed once B's endpoints hold every worker B may take, is
// delivered while every attempt to B still hangs: it waits for none of
// B's timeouts (before, it waited for two rounds of them: 20 s at the
// default 10 s timeout, 40 s with 5 000 queued). B, alone with jobs, takes
// every worker but the reserve (an eighth), and never more; nor more than
// its share of the deliveries a replica leases (HeldPerWorkspace).
func TestHangingNeighbour(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		b, a := setup(t, db), setupKey(t, db, "Neighbour", "NB")
		hang := newHangingReceiver(t)
		fast := newReceiver(t, nil)
		for i := range 50 {
			b.endpoint(t, fmt.Sprintf("%s/%d", hang.URL, i), endpointOpts{})
		}
		epA := a.endpoint(t, fast.URL, endpointOpts{})
		b.events(t, 100)
		o := options()
		o.Timeout = time.Minute
		const workers, reserve, heldTotal, heldPerWorkspace = 32, 4, 4096, 2048
		d := start(t, db, o)
		t.Cleanup(hang.release)
		eventually(t, "B's deliveries queued and B's endpoints holding every worker but the reserve", func() bool {
			n, err := db.Client.WebhookDelivery.Query().Where(webhookdelivery.WorkspaceID(b.boot.Workspace.ID)).Count(sys())
			holding, _, _ := hang.counts()
			return err == nil && n == 5000 && holding >= workers-reserve
		})
		a.categories(t, 1)
		eventually(t, "A's delivery received", func() bool { return len(fast.received()) == 1 })
		holding, most, started := hang.counts()
		if holding != started {
			t.Fatalf("%d of B's attempts ended before A's delivery: it waited for them", started-holding)
		}
		if most > workers-reserve {
			t.Errorf("B held %d workers at once, want at most %d of the %d", most, workers-reserve, workers)
		}
		if held, _, _ := d.HeldOf(b.boot.Workspace.ID); held > heldPerWorkspace {
			t.Errorf("B holds %d deliveries, want at most %d of the %d", held, heldPerWorkspace, heldTotal)
		}
		eventually(t, "A's delivery recorded", func() bool { return settled(t, db, epA, 1) })
	})
}

// plantDue inserts a delivery to each of eps of each of the latest n
// events of f's workspace, due and leased by nobody: the backlog a fan-out
// that had no room leaves.
func plantDue(t *testing.T, db *database.DB, f *fixture, eps []*ent.WebhookEndpoint, n int) {
	t.Helper()
	f.events(t, n)
	evs, err := db.Client.Event.Query().Where(event.WorkspaceID(f.boot.Workspace.ID)).
		Order(ent.Desc(event.FieldVersion)).Limit(n).All(sys())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Second).Truncate(time.Microsecond)
	var creates []*ent.WebhookDeliveryCreate
	flush := func() {
		must(t, db.Client.WebhookDelivery.CreateBulk(creates...).Exec(sys()))
		creates = creates[:0]
	}
	for _, ep := range eps {
		for _, e := range evs {
			creates = append(creates, db.Client.WebhookDelivery.Create().SetWorkspaceID(f.boot.Workspace.ID).SetEndpointID(ep.ID).
				SetEventID(e.ID).SetEventVersion(e.Version).SetNextAttemptAt(at).SetCreatedAt(at))
			if len(creates) == 1000 {
				flush()
			}
		}
	}
	if len(creates) > 0 {
		flush()
	}
}

// leased counts the deliveries of workspace ws leased.
func leased(t *testing.T, db *database.DB, ws uuid.UUID) int {
	t.Helper()
	n, err := db.Client.WebhookDelivery.Query().Where(webhookdelivery.WorkspaceID(ws), webhookdelivery.LeaseUntilNotNil()).Count(sys())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClaimsShareAcrossWorkspaces: a claim leases every workspace's due
// deliveries, each workspace within its share of what the replica holds:
// B's backlog of 5 000, on endpoints that come first in every order,
// leaves room for A's one delivery in the same claim (before, B's first
// endpoint took the replica's whole room, claim after claim).
func TestClaimsShareAcrossWorkspaces(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		b, a := setup(t, db), setupKey(t, db, "Neighbour", "NB")
		rc := newReceiver(t, nil)
		var epsB []*ent.WebhookEndpoint
		for i := range 50 {
			epsB = append(epsB, b.endpoint(t, fmt.Sprintf("%s/%d", rc.URL, i), endpointOpts{}))
		}
		epA := a.endpoint(t, rc.URL+"/a", endpointOpts{})
		plantDue(t, db, b, epsB, 100)
		plantDue(t, db, a, []*ent.WebhookEndpoint{epA}, 1)
		o := options()
		o.HeldTotal = 100 // HeldPerWorkspace: 50
		d := webhooks.New(db.Client, db.Dialect, o)
		defer d.Close()
		must(t, d.ClaimNow(sys()))
		if n := leased(t, db, a.boot.Workspace.ID); n != 1 {
			t.Errorf("A's delivery not leased by the claim (%d leased)", n)
		}
		if n := leased(t, db, b.boot.Workspace.ID); n == 0 || n > 50 {
			t.Errorf("B has %d deliveries leased, want some and at most its share, 50", n)
		}
		// Each of B's endpoints had its part of B's share.
		for _, ep := range epsB {
			if n, _ := db.Client.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(ep.ID), webhookdelivery.LeaseUntilNotNil()).
				Count(sys()); n != 1 {
				t.Fatalf("endpoint %s has %d leased, want 1 (B's 50 shared among its 50 endpoints)", ep.URL, n)
			}
		}
	})
}

// bigProcedure writes the largest event a write can log: a procedure whose
// name and captureId are as long as allowed, of a character JSON escapes
// as six bytes.
func (f *fixture) bigProcedure(t testing.TB) {
	t.Helper()
	due := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	capture := strings.Repeat("<", 200)
	_, err := f.svc.CreateProcedure(f.admin, core.CreateProcedureInput{Name: strings.Repeat("<", 500), Priority: "MEDIUM", State: "TODO",
		DueAt: &due, CategoryID: f.category.ID.String(), DoerID: f.boot.Admin.ID.String(), ProjectID: f.projects[0].ID.String(),
		CaptureID: &capture})
	if err != nil {
		t.Fatalf("CreateProcedure: %v", err)
	}
}

// silentReceiver accepts connections and never reads from them: an
// endpoint that takes every delivery's connection and never answers.
// hangUp closes them (a cleanup to register after the dispatcher's, so
// that its Close does not wait for its attempts' timeout).
func silentReceiver(t *testing.T) (url string, hangUp func()) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	hangUp = func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(hangUp)
	return "http://" + l.Addr().String(), hangUp
}

// TestWebhookMemoryBudget: what a replica holds for one workspace's
// deliveries is bounded in bytes, whatever its events. Workspace B writes
// 200 of the largest events a write can log, for an endpoint that never
// reads: the fan-out leases B no more than B's share of the memory
// budget (its bodies, each once, and what each delivery's answer may
// take), hands the rest back to wait in the database, and A's delivery
// is leased beside them, from A's own share. Then, running, A's
// delivery is sent while B's endpoint holds its connections, and the
// budget still holds.
func TestWebhookMemoryBudget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		b, a := setup(t, db), setupKey(t, db, "Neighbour", "NB")
		silent, hangUp := silentReceiver(t)
		fast := newReceiver(t, nil)
		epB := b.endpoint(t, silent, endpointOpts{})
		a.endpoint(t, fast.URL, endpointOpts{})
		for range 200 {
			b.bigProcedure(t)
		}
		a.categories(t, 1)
		const ceiling, share = 256 << 10, 64 << 10
		o := options()
		o.Memory, o.MemoryPerWorkspace, o.Timeout = ceiling, share, time.Minute

		d := webhooks.New(db.Client, db.Dialect, o)
		for more := true; more; {
			var err error
			more, err = d.FanOutNow(sys())
			must(t, err)
		}
		heldB, budgetB, bytesB := d.HeldOf(b.boot.Workspace.ID)
		heldA, _, _ := d.HeldOf(a.boot.Workspace.ID)
		body := len(deliveryBody(t, db, epB))
		if body < 4000 {
			t.Fatalf("B's events render %d bytes: not the largest", body)
		}
		if bytesB > share || budgetB > share || heldB == 0 || heldB >= 200 {
			t.Errorf("B: %d deliveries held, %d bytes queued (the budget says %d); want some, within its share of %d",
				heldB, bytesB, budgetB, share)
		}
		if bytesB > budgetB {
			t.Errorf("the budget counts %d bytes for B, which holds %d", budgetB, bytesB)
		}
		if heldA != 1 {
			t.Errorf("A: %d deliveries held, want its 1 beside B's", heldA)
		}
		if total, refused := d.MemoryHeld(); total > ceiling || refused == 0 {
			t.Errorf("the replica holds %d bytes (ceiling %d), %d reservations refused", total, ceiling, refused)
		}
		d.Close()
		if total, _ := d.MemoryHeld(); total != 0 || d.Held() != 0 {
			t.Errorf("closed, the dispatcher holds %d deliveries and %d bytes", d.Held(), total)
		}

		// Running: the leases the first dispatcher handed back (or
		// that it kept, once over) are claimed again.
		must(t, db.Client.WebhookDelivery.Update().Where(webhookdelivery.LeaseUntilNotNil()).ClearLeaseUntil().Exec(sys()))
		d = start(t, db, o)
		t.Cleanup(hangUp)
		a.categories(t, 1)
		eventually(t, "A's deliveries received", func() bool { return len(fast.received()) >= 1 })
		if _, budgetB, _ := d.HeldOf(b.boot.Workspace.ID); budgetB > share {
			t.Errorf("running, the budget holds %d bytes for B, over its share of %d", budgetB, share)
		}
		if total, _ := d.MemoryHeld(); total > ceiling {
			t.Errorf("running, the replica holds %d bytes, over its ceiling of %d", total, ceiling)
		}
		// Every byte comes back: B's endpoint hangs up, its attempts
		// end, and the dispatcher closes.
		hangUp()
		d.Close()
		if total, _ := d.MemoryHeld(); total != 0 || d.Held() != 0 {
			t.Errorf("closed, the dispatcher holds %d deliveries and %d bytes", d.Held(), total)
		}
	})
}

// deliveryBody renders the event of ep's first delivery as it is sent.
func deliveryBody(t *testing.T, db *database.DB, ep *ent.WebhookEndpoint) []byte {
	t.Helper()
	ds := deliveries(t, db, ep)
	if len(ds) == 0 {
		t.Fatal("no delivery")
	}
	e, err := db.Client.Event.Get(sys(), ds[0].EventID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := core.EventOf(e)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return body
}
