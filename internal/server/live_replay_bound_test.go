//go:build unix

package server_test

// What resuming a subscription can make a replica hold and do. In review,
// ten Server-Sent Events streams of one VIEWER that resumed over a procedure
// carrying 2 MB of comments and then never read took the heap from 24 MB to
// 1 343 MB in 22 s (a write gathered 64 replayed events of 2.1 MB each), and
// five that read cost 27.6 s of CPU for 2 rate-limit tokens each.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/graph/live"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// heavyResume is a resumed subscription selecting a procedure's 100
// comments: 2 MB a replayed event here.
func heavyResume(after int64) string {
	return `subscription { procedureEvents(afterVersion: ` + strconv.FormatInt(after, 10) +
		`) { kind workspaceVersion procedure { name comments(last: 100) { nodes { text } } } } }`
}

// TestLiveReplayMemoryIsBounded: 20 resumers that never read and 20 that
// read, each replaying 16 events of 2 MB: a replayed event is held by its
// subscriber until written (one at a time; a write takes at most 1 MiB of
// them, or one), so the heap grows by about one event per resumer, not by
// every event of its replay; what the replica holds for live updates stays
// within its bound; and another workspace's subscriber is sent its events
// meanwhile.
func TestLiveReplayMemoryIsBounded(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			const ceiling = 128 << 20
			// The stalled resumers stay stalled while the heap is measured;
			// pacing by the rate limit is TestLiveReplayIsPriced's.
			s := startLive(t, db, liveConfig{dsn: dsn, rate: 1e6, live: live.Options{
				WriteTimeout: time.Minute, KeepAlive: time.Hour, Recheck: time.Hour, MaxPerToken: 50,
				MemoryBytes: ceiling, WorkspaceMemoryBytes: ceiling,
			}})
			ws := s.NewWorkspace(t, "Resumed", "RSM")
			id := createProcedure(t, s, ws, ws.MemberToken, "Heavy", "")
			addComments(t, s, ws.MemberToken, id, 100, 20_000)
			after := workspaceVersion(t, db, ws.ID)
			const replayed = 16
			for i := range replayed {
				renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("Heavy %d", i))
			}
			other := s.NewWorkspace(t, "Bystander", "BYS")
			otherID := createProcedure(t, s, other, other.MemberToken, "Quiet", "")
			bystander, status, body := postSSE(t, s, other.ViewToken, `subscription { procedureEvents { kind procedure { name } } }`, nil)
			if status != http.StatusOK {
				t.Fatalf("the bystander: %d %s", status, body)
			}
			ready(t, s, 1)

			base := heapInUse()
			var peak uint64
			var peakMu sync.Mutex
			sample := func() {
				h := heapInUse()
				peakMu.Lock()
				peak = max(peak, h)
				peakMu.Unlock()
			}
			for range 20 {
				stalledSSE(t, s, ws.ViewToken, heavyResume(after))
			}
			var readers sync.WaitGroup
			for range 20 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if n := countSSEEvents(ctx, t, s, ws.ViewToken, heavyResume(after), replayed); n != replayed {
						t.Errorf("a reading resumer was sent %d events, want %d", n, replayed)
					}
				}()
			}
			done := make(chan struct{})
			go func() { readers.Wait(); close(done) }()
			// While they replay, what the replica holds stays within its
			// bound, and the bystander is sent its events.
			for i := 0; ; i++ {
				select {
				case <-done:
				default:
					sample()
					if held := s.Live.Stats().HeldBytes; held > ceiling {
						t.Fatalf("the replica holds %d bytes of renderings, over its bound of %d", held, ceiling)
					}
					renameProcedure(t, s, other.MemberToken, otherID, fmt.Sprintf("Quiet %d", i))
					e := decodeEvent(t, bystander.next())
					if i == 0 && e.Kind == "CREATED" {
						// On PostgreSQL the creation's notification may come
						// after the subscription began.
						e = decodeEvent(t, bystander.next())
					}
					if e.Procedure == nil || e.Procedure.Name != fmt.Sprintf("Quiet %d", i) {
						t.Fatalf("the bystander was sent %s %+v, want the rename to Quiet %d", e.Kind, e.Procedure, i)
					}
					continue
				}
				break
			}
			// The stalled resumers still hold what they hold.
			sample()
			grown := int64(peak) - int64(base)
			held := s.Live.Stats().HeldBytes
			t.Logf("20 stalled and 20 reading resumers of %d events of 2 MB: the heap grew %d MB at most; %d MB of renderings held now",
				replayed, grown>>20, held>>20)
			// About an event per stalled resumer (2 MB each) and one or two
			// per reader while it reads, and the caches (16 MB): every event
			// of every replay was 830 MB here.
			if grown > 200<<20 {
				t.Fatalf("the heap grew %d MB", grown>>20)
			}
			if held > 20*3<<20 {
				t.Fatalf("20 stalled resumers hold %d MB of renderings: more than one event each", held>>20)
			}
		})
	}
}

// TestLiveMemorySharePerWorkspace: one workspace's resumers that never read
// take at most its share of the live memory: past it, its subscriptions
// that ask for more are ended (unavailable), and another workspace's
// subscribers are still sent every event.
func TestLiveMemorySharePerWorkspace(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			db, dsn := openDB(t, dialect)
			const share = 8 << 20
			s := startLive(t, db, liveConfig{dsn: dsn, rate: 1e6, live: live.Options{
				WriteTimeout: time.Minute, KeepAlive: time.Hour, Recheck: time.Hour, MaxPerToken: 50,
				// Room for the hog's share and two more events: without the
				// share, the hog's stalled resumers would take it all.
				MemoryBytes: share + 4<<20, WorkspaceMemoryBytes: share,
			}})
			hog := s.NewWorkspace(t, "Hog", "HOG")
			id := createProcedure(t, s, hog, hog.MemberToken, "Heavy", "")
			addComments(t, s, hog.MemberToken, id, 100, 20_000)
			after := workspaceVersion(t, db, hog.ID)
			for i := range 4 {
				renameProcedure(t, s, hog.MemberToken, id, fmt.Sprintf("Heavy %d", i))
			}
			for range 10 {
				stalledSSE(t, s, hog.ViewToken, heavyResume(after))
			}
			// Ten resumers that never read each come to hold an event they
			// cannot write (2 MB each, 20 MB in all): the hog's share is
			// taken, and some of them are refused.
			waitUntil(t, "the hog's share is taken", func() bool { return s.Live.Stats().RefusedRenderings > 0 })
			// A reader of the hog's past its share is told so. The stalled
			// resumers' first events may still pass into the sockets'
			// buffers, freeing room a moment: readers come until one is
			// refused (once every stalled resumer is blocked, the first).
			refused := false
			for range 20 {
				st, status, body := postSSE(t, s, hog.ViewToken, heavyResume(after), nil)
				if status != http.StatusOK {
					t.Fatalf("a reader of the hog's: %d %s", status, body)
				}
				r := variablesOutcome(t, st.next())
				st.resp.Body.Close()
				if r == "error:unavailable" {
					refused = true
					break
				}
				if !strings.HasPrefix(r, `{"procedureEvents":`) {
					t.Fatalf("a reader of the hog's was sent %.200s, want an event or error:unavailable", r)
				}
			}
			if !refused {
				t.Fatal("20 readers of the hog's, past its share, were never refused")
			}
			if held := s.Live.MemoryHeldBy(uuid.MustParse(hog.ID)); held > share {
				t.Fatalf("the hog holds %d bytes, over its share of %d", held, share)
			}

			// Another workspace's subscriber of the same heavy shape is sent
			// every event.
			other := s.NewWorkspace(t, "Other", "OTH")
			otherID := createProcedure(t, s, other, other.MemberToken, "Heavy too", "")
			addComments(t, s, other.MemberToken, otherID, 100, 20_000)
			sub, status, body := postSSE(t, s, other.ViewToken, `subscription { procedureEvents { kind procedure { name comments(last: 100) { nodes { text } } } } }`, nil)
			if status != http.StatusOK {
				t.Fatalf("the other workspace's subscriber: %d %s", status, body)
			}
			for i := range 3 {
				renameProcedure(t, s, other.MemberToken, otherID, fmt.Sprintf("Heavy too %d", i))
				if e := decodeEvent(t, sub.next()); e.Procedure == nil || len(e.Procedure.Comments.Nodes) != 100 {
					t.Fatalf("the other workspace's event %d: %+v", i, e.Kind)
				}
			}
		})
	}
}

// TestLiveReplayIsPriced: a resumed subscription pays for what its replay
// renders: each replayed event costs its subscriber's token one token and
// one more per live.ReplayBytesPerToken of it, as a page of a list would,
// not the two tokens its opening costs whatever it replays. The clock of
// the rate limit stands still: nothing refills while it is measured.
func TestLiveReplayIsPriced(t *testing.T) {
	db, dsn := openDB(t, "sqlite")
	now := time.Now()
	s := startLive(t, db, liveConfig{dsn: dsn, rate: 5000, clock: func() time.Time { return now }})
	ws := s.NewWorkspace(t, "Priced", "PRC")
	id := createProcedure(t, s, ws, ws.MemberToken, "Heavy", "")
	addComments(t, s, ws.MemberToken, id, 100, 20_000)
	after := workspaceVersion(t, db, ws.ID)
	const replayed = 4
	for i := range replayed {
		renameProcedure(t, s, ws.MemberToken, id, fmt.Sprintf("Heavy %d", i))
	}
	remaining := func() int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, s.URL+"/procedures?limit=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+ws.ViewToken)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		n, err := strconv.Atoi(resp.Header.Get("RateLimit-Remaining"))
		if err != nil {
			t.Fatalf("RateLimit-Remaining %q", resp.Header.Get("RateLimit-Remaining"))
		}
		return n
	}
	before := remaining()
	st, status, body := postSSE(t, s, ws.ViewToken, heavyResume(after), nil)
	if status != http.StatusOK {
		t.Fatalf("resume: %d %s", status, body)
	}
	want := 0
	for range replayed {
		b := st.next()
		want += 1 + len(b)/live.ReplayBytesPerToken
	}
	st.resp.Body.Close()
	// The second look costs a token, and opening the subscription what
	// its operation costs (a few).
	spent := before - remaining() - 1
	t.Logf("a replay of %d events of 2 MB spent %d tokens (its events' price: %d)", replayed, spent, want)
	if spent < want || spent > want+20 {
		t.Fatalf("a replay of %d events of 2 MB spent %d tokens, want %d and what opening costs", replayed, spent, want)
	}
}

// countSSEEvents subscribes with query over Server-Sent Events and reads
// the stream, keeping nothing (its memory is not the server's), until want
// events came or it ended; it returns how many came.
func countSSEEvents(ctx context.Context, t *testing.T, s *liveServer, token, query string, want int) int {
	body := mustJSON(map[string]any{"query": query})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.Error(err)
		}
		return 0
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	n, lineStart := 0, true
	for n < want {
		line, err := r.ReadSlice('\n')
		if lineStart && bytes.HasPrefix(line, []byte("event: next")) {
			n++
		}
		if err != nil && err != bufio.ErrBufferFull {
			return n
		}
		lineStart = err == nil
	}
	return n
}
