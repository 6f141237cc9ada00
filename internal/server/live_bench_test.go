package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// BenchmarkLiveFanOut: one write delivered to many Server-Sent Events
// subscribers of the same operation, on real sockets; an op is one rename
// until every subscriber has read its event. Compare ns/op and allocs/op
// per subscriber count: with one rendering per event, a subscriber adds a
// channel send and a socket write.
func BenchmarkLiveFanOut(b *testing.B) {
	for _, subscribers := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("subscribers=%d", subscribers), func(b *testing.B) {
			benchFanOut(b, subscribers, live.Options{}, false)
		})
	}
}

// BenchmarkLiveCaches weighs the live reads, renderings and credential
// checks kept (graph/live: flights.go, --live-cache-mb; docs/caching.md)
// on BenchmarkLiveFanOut's 100 subscribers, of one operation
// (operations=one: one group) or each of its own (operations=distinct: 100
// groups, whose reads of the event and checks of the token may be shared
// across groups): state=on is the default bound, state=off a bound of one
// byte, which keeps nothing once computed (a computation still in flight
// is still shared).
func BenchmarkLiveCaches(b *testing.B) {
	for _, ops := range []string{"one", "distinct"} {
		for _, state := range []string{"on", "off"} {
			b.Run("cache=live/operations="+ops+"/state="+state, func(b *testing.B) {
				var opts live.Options
				if state == "off" {
					opts.CacheBytes = 1
				}
				benchFanOut(b, 100, opts, ops == "distinct")
			})
		}
	}
}

// benchFanOut: distinct gives each subscriber an operation of its own.
func benchFanOut(b *testing.B, subscribers int, opts live.Options, distinct bool) {
	db := dbtest.Open(b, "sqlite")
	opts.MaxPerToken = subscribers
	s := startLive(b, db, liveConfig{live: opts})
	ws := s.NewWorkspace(b, "Fan", "FAN")
	id := createProcedure(b, s, ws, ws.MemberToken, "Fan", "")

	var received atomic.Int64
	var readers sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); readers.Wait() }()
	for n := range subscribers {
		alias := "state"
		if distinct {
			alias = fmt.Sprintf("s%d: state", n)
		}
		query := mustJSON(map[string]any{"query": `subscription { procedureEvents { kind workspaceVersion procedure { id name ` + alias + ` doer { name } } } }`})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/graphql", bytes.NewReader(query))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+ws.ViewToken)
		resp, err := s.HTTP.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("subscribe: %v %v", err, resp)
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "event: next") {
					received.Add(1)
				}
			}
		}()
	}
	deadline := time.Now().Add(waitFor)
	for s.Live.Stats().Subscriptions < subscribers {
		if time.Now().After(deadline) {
			b.Fatal("subscriptions did not open")
		}
		time.Sleep(time.Millisecond)
	}
	start := db.Statements()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		want := int64(i+1) * int64(subscribers)
		renameProcedure(b, s, ws.MemberToken, id, fmt.Sprintf("Fan %d", i))
		for received.Load() < want {
			if time.Now().After(deadline.Add(time.Duration(i) * time.Second)) {
				b.Fatalf("%d of %d events delivered", received.Load(), want)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*subscribers), "ns/delivery")
	b.ReportMetric(float64(db.Statements()-start)/float64(b.N), "stmts/op")
}
