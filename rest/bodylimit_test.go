package rest_test

// The 1 MiB limit on REST request bodies holds before anything reads a
// body: the response cache, which runs first, does not buffer an oversized
// body past the limit either.

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// spaces is an endless-looking body of max spaces that counts what the
// server pulled from it.
type spaces struct {
	sent, max int64
	total     *atomic.Int64
}

func (s *spaces) Read(p []byte) (int, error) {
	if s.sent >= s.max {
		return 0, io.EOF
	}
	if int64(len(p)) > s.max-s.sent {
		p = p[:s.max-s.sent]
	}
	for i := range p {
		p[i] = ' '
	}
	s.sent += int64(len(p))
	s.total.Add(int64(len(p)))
	return len(p), nil
}

// The response cache read every POST body into memory to build its key,
// with no bound: it runs before the REST handlers' 1 MiB limit (only
// /graphql bodies are bounded before it), so any token holder could make the
// server buffer an arbitrarily large REST body before it answered 413.
func TestBodyNotBufferedPastLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for _, tok := range []string{e.ws.MemberToken, e.ws.ViewToken} {
			// A first request records the token's lastUsedAt, after which
			// requests use the response cache.
			wantOK(t, e.do(t, "GET", "/categories", tok, nil))
			var total atomic.Int64
			const size = 64 << 20
			req, err := http.NewRequest("POST", e.srv.URL+"/categories", &spaces{max: size, total: &total})
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := e.srv.HTTP.Do(req)
			if err == nil {
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					t.Fatalf("status %d: %s", resp.StatusCode, raw)
				}
			}
			if n := total.Load(); n > 16<<20 {
				t.Errorf("the server read %d MiB of a %d MiB body; the limit is 1 MiB", n>>20, size>>20)
			}
		}
	})
}
