package rest_test

// GET /procedures/{id}/history and GET /events (docs/api.md, "Events"):
// core.Event's shape in the list envelope, pages by number or by cursor
// (meta.nextCursor, stable while events are appended), exact totals, the
// filters, each role the events of the records it reads, no other
// workspace's events, bad parameters named, and no cached answer that
// outlives the retention.

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// checkEvent asserts core.Event's shape.
func checkEvent(t testing.TB, e map[string]any) {
	t.Helper()
	wantKeys(t, "event", e, "id", "type", "workspaceId", "version", "createdAt", "entity", "procedureId", "projectId", "actor", "changes")
	wantID(t, "id", e["id"])
	wantTimestamp(t, "createdAt", e["createdAt"])
	if v, ok := e["version"].(float64); !ok || v < 1 {
		t.Fatalf("version %v", e["version"])
	}
	entity := asObject(t, e["entity"], "entity")
	wantKeys(t, "entity", entity, "type", "id")
	if !strings.HasPrefix(e["type"].(string), entity["type"].(string)+".") {
		t.Fatalf("type %v of entity %v", e["type"], entity["type"])
	}
	actor := asObject(t, e["actor"], "actor")
	wantKeys(t, "actor", actor, "memberId", "tokenId")
	if _, ok := e["changes"].([]any); !ok {
		t.Fatalf("changes %#v", e["changes"])
	}
}

// eventPage reads one page of path.
func (e *env) eventPage(t testing.TB, path, token string) (items []map[string]any, total int, next string) {
	t.Helper()
	body := wantOK(t, e.do(t, "GET", path, token, nil))
	wantKeys(t, "list", body, "data", "meta")
	data, ok := body["data"].([]any)
	if !ok {
		t.Fatalf("data = %#v", body["data"])
	}
	meta := asObject(t, body["meta"], "meta")
	wantKeys(t, "meta", meta, "total", "nextCursor")
	n, ok := meta["total"].(float64)
	if !ok || int(n) < len(data) {
		t.Fatalf("meta.total = %#v with %d items", meta["total"], len(data))
	}
	for _, d := range data {
		items = append(items, asObject(t, d, "event"))
		checkEvent(t, items[len(items)-1])
	}
	next, _ = meta["nextCursor"].(string)
	return items, int(n), next
}

func versionsOf(items []map[string]any) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = int(it["version"].(float64))
	}
	return out
}

func TestEventEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		other := &env{srv: e.srv, ws: e.srv.NewWorkspace(t, "Other", "OTH")}
		p := e.createProcedure(t, map[string]any{"name": "Audited", "content": "SECRET body"})
		id := p["id"].(string)
		for i := 0; i < 7; i++ {
			wantOK(t, e.do(t, "PUT", "/procedures/"+id, e.ws.MemberToken, map[string]any{"name": fmt.Sprintf("Audited %d", i)}))
		}
		wantOK(t, e.do(t, "POST", "/procedures/"+id+"/comments", e.ws.AdminToken, map[string]any{"text": "SECRET note"}))
		theirs := other.createProcedure(t, nil)["id"].(string)
		// count counts e's workspace's events where admits (one ?
		// placeholder, for arg) that a VIEWER reads: no token's
		// (TestEventsFollowTheRolesOfTheirRecords).
		count := func(where string, arg any) int {
			t.Helper()
			q := "SELECT COUNT(*) FROM events WHERE workspace_id = '" + e.ws.ID + "' AND kind NOT LIKE 'token.%' AND " + where
			if db.Dialect == "postgres" {
				q = strings.Replace(q, "?", "$1", 1)
			}
			var n int
			if err := db.SQL.QueryRow(q, arg).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		t.Run("History", func(t *testing.T) {
			items, total, _ := e.eventPage(t, "/procedures/"+p["shortId"].(string)+"/history", e.ws.ViewToken)
			if total != 9 || len(items) != 9 || items[0]["type"] != "comment.created" || items[8]["type"] != "procedure.created" {
				t.Fatalf("history: %d of %d, %v … %v", len(items), total, items[0]["type"], items[len(items)-1]["type"])
			}
			created := items[8]
			if created["procedureId"] != id || created["projectId"] != e.ws.ProjectID || asObject(t, created["entity"], "entity")["id"] != id {
				t.Fatalf("created: %v", created)
			}
			if a := asObject(t, created["actor"], "actor"); a["memberId"] != e.ws.MemberID || a["tokenId"] == nil {
				t.Fatalf("actor %v", a)
			}
			raw := string(e.do(t, "GET", "/procedures/"+id+"/history", e.ws.ViewToken, nil).Raw)
			if strings.Contains(raw, "SECRET") || !strings.Contains(raw, `"sha256":`) {
				t.Fatalf("texts must be logged as size and hash: %s", raw)
			}
			// By number and by cursor, with new events appended between
			// pages: the cursor's pages neither repeat nor skip.
			byNumber, _, _ := e.eventPage(t, "/procedures/"+id+"/history?page=2&limit=3", e.ws.ViewToken)
			if !slices.Equal(versionsOf(byNumber), versionsOf(items[3:6])) {
				t.Fatalf("page 2 of 3: %v, want %v", versionsOf(byNumber), versionsOf(items[3:6]))
			}
			var read []map[string]any
			path := "/procedures/" + id + "/history?limit=4"
			for appended := 0; ; appended++ {
				page, total, next := e.eventPage(t, path, e.ws.ViewToken)
				if total != 9+appended {
					t.Fatalf("total %d after %d appended", total, appended)
				}
				read = append(read, page...)
				if next == "" {
					break
				}
				path = "/procedures/" + id + "/history?limit=4&cursor=" + url.QueryEscape(next)
				wantOK(t, e.do(t, "PUT", "/procedures/"+id, e.ws.MemberToken, map[string]any{"priority": []string{"LOW", "HIGH"}[appended%2]}))
			}
			if !slices.Equal(versionsOf(read), versionsOf(items)) {
				t.Fatalf("cursor pages read %v, want %v", versionsOf(read), versionsOf(items))
			}
		})

		t.Run("Events", func(t *testing.T) {
			all := count("version > ?", 0)
			var read []map[string]any
			path := "/events?limit=7"
			for {
				page, total, next := e.eventPage(t, path, e.ws.ViewToken)
				if total != all {
					t.Fatalf("total %d, COUNT %d", total, all)
				}
				read = append(read, page...)
				if next == "" {
					break
				}
				path = "/events?limit=7&cursor=" + url.QueryEscape(next)
			}
			if len(read) != all {
				t.Fatalf("%d events read, %d stored", len(read), all)
			}
			for _, it := range read {
				if it["workspaceId"] != e.ws.ID || it["procedureId"] == theirs {
					t.Fatalf("another workspace's event: %v", it)
				}
			}
			v := versionsOf(read)
			mid := v[len(v)/2]
			feed, total, _ := e.eventPage(t, fmt.Sprintf("/events?after=%d&order=asc&limit=500", mid), e.ws.ViewToken)
			if total != count("version > ?", mid) || len(feed) != total || versionsOf(feed)[0] <= mid {
				t.Fatalf("feed after %d: %v", mid, versionsOf(feed))
			}
			if !slices.IsSorted(versionsOf(feed)) {
				t.Fatalf("feed not oldest first: %v", versionsOf(feed))
			}
			for _, f := range []struct {
				query, where string
				arg          string
			}{
				{"kind=procedure.updated", "kind = ?", "procedure.updated"},
				{"kind=comment.created&kind=procedure.created", "kind IN ('comment.created', ?)", "procedure.created"},
				{"kind=comment.created,procedure.created", "kind IN ('comment.created', ?)", "procedure.created"},
				{"procedureId=" + id, "procedure_id = ?", id},
				{"entityId=" + id, "entity_id = ?", id},
				{"projectId=" + e.ws.ProjectID, "project_id = ?", e.ws.ProjectID},
				{"actorId=" + e.ws.AdminID, "actor_member_id = ?", e.ws.AdminID},
				{"procedureId=" + theirs, "procedure_id = ?", theirs},
			} {
				_, total, _ := e.eventPage(t, "/events?"+f.query, e.ws.ViewToken)
				if want := count(f.where, f.arg); total != want {
					t.Fatalf("%s: total %d, COUNT %d", f.query, total, want)
				}
			}
		})

		t.Run("Refused", func(t *testing.T) {
			_, _, next := e.eventPage(t, "/events?limit=1", e.ws.ViewToken)
			for _, row := range []struct {
				path   string
				status int
				code   string
				field  string
			}{
				{"/events?kind=procedure.renamed", 400, "validation_failed", "kind"},
				{"/events?kind=", 400, "validation_failed", "kind"},
				{"/events?kind=PROCEDURE_UPDATED", 400, "validation_failed", "kind"},
				{"/events?after=-1", 400, "validation_failed", "after"},
				{"/events?after=x", 400, "validation_failed", "after"},
				{"/events?order=up", 400, "validation_failed", "order"},
				{"/events?entityId=1", 400, "validation_failed", "entityId"},
				{"/events?procedureId=RST-1", 400, "validation_failed", "procedureId"},
				{"/events?limit=501", 400, "validation_failed", "limit"},
				{"/events?cursor=nope", 400, "validation_failed", "cursor"},
				{"/events?order=asc&cursor=" + url.QueryEscape(next), 400, "validation_failed", "cursor"},
				{"/events?page=2&cursor=" + url.QueryEscape(next), 400, "validation_failed", "page"},
				{"/events?colour=red", 400, "validation_failed", "colour"},
				{"/procedures/" + id + "/history?cursor=" + url.QueryEscape(next), 400, "validation_failed", "cursor"},
				{"/procedures/" + id + "/history?limit=101", 400, "validation_failed", "limit"},
				{"/procedures/" + id + "/history?after=1", 400, "validation_failed", "after"},
				{"/procedures/RST-404/history", 404, "not_found", ""},
				{"/procedures/" + theirs + "/history", 404, "not_found", ""},
			} {
				wantError(t, e.do(t, "GET", row.path, e.ws.ViewToken, nil), row.status, row.code, row.field)
			}
		})

		// Retention deletes events without a write: an answer read before
		// must not be served from the cache after, and a feed from before
		// the horizon is told to reload.
		t.Run("Pruned", func(t *testing.T) {
			// The token's first use records it, a write: from then on the
			// version stays, and a cacheable answer would be served again.
			wantOK(t, e.do(t, "GET", "/members", e.ws.ViewToken, nil))
			_, before, _ := e.eventPage(t, "/events", e.ws.ViewToken)
			_, historyBefore, _ := e.eventPage(t, "/procedures/"+id+"/history", e.ws.ViewToken)
			oldest := versionsOf(wantListOf(t, e, "/events?order=asc&limit=3"))
			horizon := oldest[2]
			q := "DELETE FROM events WHERE workspace_id = ? AND version <= ?"
			u := "UPDATE workspaces SET events_pruned_to = ? WHERE id = ?"
			if db.Dialect == "postgres" {
				q = "DELETE FROM events WHERE workspace_id = $1 AND version <= $2"
				u = "UPDATE workspaces SET events_pruned_to = $1 WHERE id = $2"
			}
			if _, err := db.SQL.Exec(q, e.ws.ID, horizon); err != nil {
				t.Fatal(err)
			}
			if _, err := db.SQL.Exec(u, horizon, e.ws.ID); err != nil {
				t.Fatal(err)
			}
			if _, after, _ := e.eventPage(t, "/events", e.ws.ViewToken); after != before-3 {
				t.Fatalf("%d events before pruning 3, %d after", before, after)
			}
			if _, after, _ := e.eventPage(t, "/procedures/"+id+"/history", e.ws.ViewToken); after > historyBefore {
				t.Fatalf("history %d, then %d", historyBefore, after)
			}
			body := wantError(t, e.do(t, "GET", fmt.Sprintf("/events?after=%d", horizon-1), e.ws.ViewToken, nil), 400, "validation_failed", "after")
			if !strings.Contains(body["message"].(string), fmt.Sprintf("version %d", horizon)) {
				t.Fatalf("the message does not say where to read on: %v", body["message"])
			}
			wantOK(t, e.do(t, "GET", fmt.Sprintf("/events?after=%d", horizon), e.ws.ViewToken, nil))
		})
	})
}

func wantListOf(t testing.TB, e *env, path string) []map[string]any {
	t.Helper()
	items, _, _ := e.eventPage(t, path, e.ws.ViewToken)
	return items
}

// TestEventsFollowTheRolesOfTheirRecords: GET /events shows a role the
// token events (a token's name, member and expiry) only if the tokens list
// (GraphQL's Query.tokens: REST has none) answers it, whatever the filter,
// with totals that count what is shown; members' events every role reads,
// as GET /members.
func TestEventsFollowTheRolesOfTheirRecords(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		var created struct {
			CreateToken struct{ Token struct{ ID string } }
		}
		e.srv.GraphQL(t, e.ws.AdminToken, `mutation { createToken(input: {name: "to revoke"}) { token { id } } }`, nil).Decode(t, &created)
		tokenID := created.CreateToken.Token.ID
		e.srv.GraphQL(t, e.ws.AdminToken, `mutation($id: ID!) { revokeToken(id: $id) { id } }`, map[string]any{"id": tokenID}).Decode(t, &struct{}{})
		count := func(where string) int {
			t.Helper()
			var n int
			if err := db.SQL.QueryRow("SELECT COUNT(*) FROM events WHERE workspace_id = '" + e.ws.ID + "' AND " + where).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		all, tokens := count("1 = 1"), count("kind LIKE 'token.%'")
		if tokens < 4 {
			t.Fatalf("the test data holds %d token events", tokens)
		}
		for role, token := range map[string]string{"ADMIN": e.ws.AdminToken, "MEMBER": e.ws.MemberToken, "VIEWER": e.ws.ViewToken} {
			t.Run(role, func(t *testing.T) {
				// The rule to mirror: what the tokens list answers this role.
				r := e.srv.GraphQL(t, token, `{ tokens { id } }`, nil)
				readsTokens := len(r.Errors) == 0
				if !readsTokens && r.Code() != "forbidden" {
					t.Fatalf("tokens: %+v", r.Errors)
				}
				want := all
				if !readsTokens {
					want -= tokens
				}
				var read []map[string]any
				path := "/events?limit=5"
				for {
					page, total, next := e.eventPage(t, path, token)
					if total != want {
						t.Fatalf("total %d, want %d", total, want)
					}
					read = append(read, page...)
					if next == "" {
						break
					}
					path = "/events?limit=5&cursor=" + url.QueryEscape(next)
				}
				shown := 0
				for _, it := range read {
					if strings.HasPrefix(it["type"].(string), "token.") {
						shown++
					}
				}
				if len(read) != want || (shown > 0) != readsTokens {
					t.Fatalf("%d events read (%d of tokens), want %d", len(read), shown, want)
				}
				for _, query := range []string{"kind=token.created,token.revoked", "entityId=" + tokenID} {
					items, total, _ := e.eventPage(t, "/events?"+query, token)
					if (total > 0) != readsTokens || len(items) != total {
						t.Fatalf("%s: %d shown, total %d, reads tokens: %v", query, len(items), total, readsTokens)
					}
				}
				if _, total, _ := e.eventPage(t, "/events?kind=member.added", token); total != count("kind = 'member.added'") || total == 0 {
					t.Fatalf("members' events: total %d", total)
				}
			})
		}
	})
}
