package webhooks_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/webhookdelivery"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/egress"
)

// fakeDNS is a resolver whose every query is answered from names, in
// memory (no packet leaves the process): a name's A and AAAA records are
// its addresses of each family; a name it does not hold does not exist.
// It stands for a DNS server that answers as an attacker likes (DNS
// rebinding: a public address at registration, a private one when
// dialled).
func fakeDNS(t testing.TB, names map[string][]netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			// Not a PacketConn: Go's resolver frames each message with
			// its length, as over TCP.
			for {
				var n uint16
				if err := binary.Read(server, binary.BigEndian, &n); err != nil {
					return
				}
				q := make([]byte, n)
				if _, err := io.ReadFull(server, q); err != nil {
					return
				}
				a := answer(q, names)
				if a == nil {
					return
				}
				if err := binary.Write(server, binary.BigEndian, uint16(len(a))); err != nil {
					return
				}
				if _, err := server.Write(a); err != nil {
					return
				}
			}
		}()
		return client, nil
	}}
}

// answer is the response to the DNS query q (nil: q is not one).
func answer(q []byte, names map[string][]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	// The question: labels, then type and class.
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		n := int(q[i])
		if i+1+n > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+n]))
		i += 1 + n
	}
	i++ // the root label
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]
	var records [][]byte
	addrs, known := names[strings.ToLower(strings.Join(labels, "."))]
	for _, a := range addrs {
		if a.Is4() && qtype == 1 || !a.Is4() && qtype == 28 {
			records = append(records, a.AsSlice())
		}
	}
	out := make([]byte, 12, 512)
	copy(out, q[:2])        // id
	flags := uint16(0x8180) // a response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(out[2:], flags)
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], uint16(len(records)))
	out = append(out, question...)
	for _, r := range records {
		out = append(out, 0xc0, 12) // the question's name
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = binary.BigEndian.AppendUint16(out, 1) // IN
		out = binary.BigEndian.AppendUint32(out, 0) // TTL
		out = binary.BigEndian.AppendUint16(out, uint16(len(r)))
		out = append(out, r...)
	}
	return out
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// loopbackReceivers serves on 127.0.0.1 and, when the host has it, on ::1
// at the same port, counting every connection either accepts.
func loopbackReceivers(t *testing.T) (port string, accepted *atomic.Int64, v6 bool) {
	t.Helper()
	accepted = &atomic.Int64{}
	serve := func(l net.Listener) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		srv.Listener.Close()
		srv.Listener = countingListener{Listener: l, accepted: accepted}
		srv.Start()
		t.Cleanup(srv.Close)
	}
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ = net.SplitHostPort(l4.Addr().String())
	serve(l4)
	if l6, err := net.Listen("tcp6", "[::1]:"+port); err == nil {
		serve(l6)
		v6 = true
	} else {
		t.Logf("no ::1 listener (%v): the IPv6 spellings reach nothing, and are checked by their refusal only", err)
	}
	return port, accepted, v6
}

// TestNothingPrivateDialled: without --webhook-allow-private-addresses, a
// delivery to a URL that reaches this host is never connected to, however
// the URL spells it: an address with a zone (the review's [::1%25lo]), the
// other spellings registration refuses (endpoints stored before the rule,
// checked again before each attempt), and names a DNS server answers with
// a loopback or unspecified address at the time of the attempt (DNS
// rebinding: names that registration accepts, refused as dialled). Each
// delivery fails saying "refused address", and the loopback listeners
// they would reach accept no connection. With private addresses allowed,
// the same resolver's names are delivered to those listeners: the test
// reaches what it says it refuses.
func TestNothingPrivateDialled(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		port, accepted, v6 := loopbackReceivers(t)
		resolver := fakeDNS(t, map[string][]netip.Addr{
			"v4.rebind.example":     {netip.MustParseAddr("127.0.0.1")},
			"v6.rebind.example":     {netip.MustParseAddr("::1")},
			"mapped.rebind.example": {netip.MustParseAddr("::ffff:127.0.0.1")},
			"any.rebind.example":    {netip.MustParseAddr("0.0.0.0")},
			"any6.rebind.example":   {netip.MustParseAddr("::")},
			"both.rebind.example":   {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
		})
		rebound := []string{"v4.rebind.example", "v6.rebind.example", "mapped.rebind.example", "any.rebind.example",
			"any6.rebind.example", "BOTH.rebind.example."}
		hosts := append([]string{
			"[::1%25lo]", "[::1%251]", "[::1%25eth0]", "127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f.1", "0x7f000001",
			"0177.0.0.1", "017700000001", "127.000.000.001", "127.0.0.1.", "localhost", "localhost.", "LOCALHOST", "LocalHost.",
			"0.0.0.0", "0", "[::]", "[::1]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
		}, rebound...)
		for _, name := range rebound {
			if err := egress.CheckHost(name, false); err != nil {
				t.Fatalf("%s is refused at registration (%v): it would not test the check as dialled", name, err)
			}
		}
		f := setup(t, db)
		var eps []*ent.WebhookEndpoint
		for _, h := range hosts {
			eps = append(eps, f.endpoint(t, "http://"+h+":"+port+"/hook", endpointOpts{}))
		}
		f.categories(t, 1)
		o := options()
		o.AllowPrivate, o.Resolver, o.Schedule = false, resolver, []time.Duration{}
		d := start(t, db, o)
		for _, ep := range eps {
			eventually(t, "the delivery to "+ep.URL+" settled", func() bool { return settled(t, db, ep, 1) })
			ds := deliveries(t, db, ep)
			if dl := ds[0]; dl.State != webhookdelivery.StateFailed || dl.StatusCode != nil || !strings.Contains(dl.Error, "refused address") {
				t.Errorf("%s: %s", ep.URL, describe(ds))
			}
		}
		if n := accepted.Load(); n != 0 {
			t.Fatalf("the loopback listeners accepted %d connections", n)
		}
		d.Close()

		// The control: allowed, the rebound names reach the listeners.
		o.AllowPrivate = true
		start(t, db, o)
		var controls []*ent.WebhookEndpoint
		for _, name := range []string{"v4.rebind.example", "mapped.rebind.example", "any.rebind.example"} {
			controls = append(controls, f.endpoint(t, "http://"+name+":"+port+"/hook", endpointOpts{}))
		}
		if v6 {
			controls = append(controls, f.endpoint(t, "http://v6.rebind.example:"+port+"/hook", endpointOpts{}))
		}
		f.categories(t, 1)
		for _, ep := range controls {
			eventually(t, "the delivery to "+ep.URL+" settled", func() bool { return settled(t, db, ep, 1) })
			if ds := deliveries(t, db, ep); ds[0].State != webhookdelivery.StateSucceeded {
				t.Errorf("allowed, %s: %s", ep.URL, describe(ds))
			}
		}
		if accepted.Load() == 0 {
			t.Error("allowed, nothing reached the listeners")
		}
	})
}

// TestFakeDNS: the test resolver answers what it holds and nothing else.
func TestFakeDNS(t *testing.T) {
	r := fakeDNS(t, map[string][]netip.Addr{"a.test.example": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.LookupNetIP(ctx, "ip", "a.test.example")
	if err != nil || len(got) != 2 {
		t.Fatalf("lookup: %v %v", got, err)
	}
	var dnsErr *net.DNSError
	if _, err := r.LookupNetIP(ctx, "ip", "b.test.example"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("an unknown name: %v", err)
	}
}
