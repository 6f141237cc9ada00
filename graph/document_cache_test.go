package graph_test

// The replica's memory of GraphQL documents (docs/caching.md, "Parsed
// documents" and "Persisted queries"): one workspace flooding it with
// distinct documents, the largest a request may carry among them, holds at
// most its share and evicts only its own entries; another workspace's
// documents and persisted queries stay cached; an unauthenticated request
// reaches neither cache.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/server"
)

// persisted is the body that runs query and registers it as a persisted
// query (withText), or runs it by its hash alone, with vars.
func persisted(query string, withText bool, vars string) []byte {
	sum := sha256.Sum256([]byte(query))
	ext := `{"persistedQuery": {"version": 1, "sha256Hash": "` + hex.EncodeToString(sum[:]) + `"}}`
	if vars == "" {
		vars = "{}"
	}
	if !withText {
		return []byte(`{"extensions": ` + ext + `, "variables": ` + vars + `}`)
	}
	return []byte(`{"query": ` + quote(query) + `, "extensions": ` + ext + `, "variables": ` + vars + `}`)
}

func TestDocumentCachesHoldEachWorkspaceToItsShare(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		// A share of 4 MiB: two of the largest documents, as text and
		// parsed; the ceiling leaves room for the victim beside it.
		const share, ceiling = 4 << 20, 12 << 20
		s := apitest.StartWith(t, db, server.Deps{DocumentCacheBytes: ceiling, DocumentCacheWorkspaceBytes: share})
		docs := s.Documents
		victim := s.NewWorkspace(t, "Victim", "VIC")
		attacker := s.NewWorkspace(t, "Attacker", "ATK")
		victimID, attackerID := uuid.MustParse(victim.ID), uuid.MustParse(attacker.ID)
		post := func(token string, body []byte) {
			t.Helper()
			r := rawGraphQL(t, s, "POST", "/graphql", bearer(token), "application/json", body)
			if len(r.Errors) > 0 {
				t.Fatalf("%.200s: %+v", body, r.Errors)
			}
		}
		const victimQuery = `query VictimList($first: Int) { procedures(first: $first) { totalCount } }`
		post(victim.MemberToken, persisted(victimQuery, true, `{"first": 1}`))
		victimHolds := docs.HeldBy(victimID)
		if victimHolds == 0 {
			t.Fatal("the victim's document and persisted query were not kept")
		}

		// 40 distinct documents of ~900 KB (a comment making up the size;
		// the body's bound is 1 MiB), then more small ones than the old
		// caches' 1 000 entries, each registered as a persisted query: the
		// attacker passes its share 17 times over.
		bounded := func(what string) {
			t.Helper()
			if held := docs.HeldBy(attackerID); held > share {
				t.Fatalf("after %s the attacker holds %d bytes, past its share of %d", what, held, share)
			}
			if held := docs.Stats().Bytes; held > ceiling {
				t.Fatalf("after %s the caches hold %d bytes, past their ceiling of %d", what, held, ceiling)
			}
		}
		var heapBefore, heapAfter runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&heapBefore)
		padding := strings.Repeat("x", 900_000)
		for i := range 40 {
			post(attacker.MemberToken, persisted(fmt.Sprintf("# %s\nquery Big%d { __typename }", padding, i), true, ""))
			bounded(fmt.Sprintf("large document %d", i))
		}
		var last string
		for i := range 1100 {
			last = fmt.Sprintf("query Flood%d { __typename }", i)
			post(attacker.MemberToken, persisted(last, true, ""))
			bounded(fmt.Sprintf("small document %d", i))
		}
		if held := docs.HeldBy(attackerID); held < share/2 {
			t.Fatalf("the attacker holds %d bytes: its own documents are not kept", held)
		}
		// And the heap holds no more than the caches' bound besides:
		// nothing else keeps a document (36 MB of them were sent).
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&heapAfter)
		if grown := int64(heapAfter.HeapAlloc) - int64(heapBefore.HeapAlloc); grown > ceiling+8<<20 {
			t.Fatalf("the heap grew %d MB over the flood", grown>>20)
		}

		// The victim's entries are all there: nothing of theirs was
		// evicted, its document is found parsed (no miss: neither parsed
		// nor validated again), its hash alone runs its persisted query.
		if held := docs.HeldBy(victimID); held != victimHolds {
			t.Fatalf("the victim holds %d bytes after the flood, %d before", held, victimHolds)
		}
		before := docs.Stats()
		post(victim.MemberToken, []byte(`{"query": `+quote(victimQuery)+`, "variables": {"first": 3}}`))
		if after := docs.Stats(); after.ParsedMisses != before.ParsedMisses || after.ParsedHits <= before.ParsedHits {
			t.Fatalf("the victim's document was not found parsed: %+v, then %+v", before, after)
		}
		post(victim.MemberToken, persisted(victimQuery, false, `{"first": 2}`))

		// The attacker's last document is kept too: a workspace past its
		// share keeps its newest.
		before = docs.Stats()
		post(attacker.MemberToken, persisted(last, false, ""))
		if after := docs.Stats(); after.ParsedMisses != before.ParsedMisses || after.PersistedHits <= before.PersistedHits {
			t.Fatalf("the attacker's newest document is not kept: %+v, then %+v", before, after)
		}

		// Without a usable token nothing is looked up or kept.
		before = docs.Stats()
		for _, header := range []http.Header{nil, bearer("not-a-token")} {
			r := rawGraphQL(t, s, "POST", "/graphql", header, "application/json", persisted("# "+padding+"\n{ __typename }", true, ""))
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("an unauthenticated request: %d %+v", r.Status, r.Errors)
			}
		}
		if after := docs.Stats(); after != before {
			t.Fatalf("unauthenticated requests reached the caches: %+v, then %+v", before, after)
		}
	})
}
