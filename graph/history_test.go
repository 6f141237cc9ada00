package graph_test

// The change log over GraphQL (docs/api.md, "Events"): Procedure.history
// and Query.events show what each write changed and who wrote it, page by
// cursors with exact totals, never show another workspace's events, refuse
// bad input naming the argument, and cost a constant number of statements
// however many procedures a page shows the histories of.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

type fieldChangeT struct {
	Field  string
	Before json.RawMessage
	After  json.RawMessage
}

type eventT struct {
	ID          string
	Kind        string
	Version     int
	CreatedAt   string
	EntityType  string
	EntityID    string
	ProcedureID *string
	ProjectID   *string
	Actor       struct {
		MemberID *string
		Member   *struct{ Name string }
		TokenID  *string
	}
	Changes []fieldChangeT
}

type eventConn struct {
	TotalCount int
	PageInfo   pageInfoT
	Nodes      []eventT
	Edges      []struct {
		Cursor string
		Node   struct{ ID string }
	}
}

const eventFields = `id kind version createdAt entityType entityId procedureId projectId
	actor { memberId member { name } tokenId } changes { field before after }`

const historyQuery = `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
	procedure(id: $id) { history(first: $first, after: $after, last: $last, before: $before) {
		totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } nodes { ` + eventFields + ` } edges { cursor node { id } } } } }`

const eventsQuery = `query($first: Int, $after: String, $last: Int, $before: String, $afterVersion: Int, $filter: EventFilter, $order: OrderDirection) {
	events(first: $first, after: $after, last: $last, before: $before, afterVersion: $afterVersion, filter: $filter, order: $order) {
		totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } nodes { ` + eventFields + ` } edges { cursor node { id } } } }`

func history(t testing.TB, s *apitest.Server, token, id string, vars map[string]any) eventConn {
	t.Helper()
	if vars == nil {
		vars = map[string]any{}
	}
	vars["id"] = id
	var out struct{ Procedure *struct{ History eventConn } }
	ok(t, s.GraphQL(t, token, historyQuery, vars), &out)
	if out.Procedure == nil {
		t.Fatalf("procedure %s is null", id)
	}
	return out.Procedure.History
}

func listEvents(t testing.TB, s *apitest.Server, token string, vars map[string]any) eventConn {
	t.Helper()
	var out struct{ Events eventConn }
	ok(t, s.GraphQL(t, token, eventsQuery, vars), &out)
	for i, e := range out.Events.Edges {
		if e.Node.ID != out.Events.Nodes[i].ID {
			t.Fatalf("edge %d is %s, node %d is %s", i, e.Node.ID, i, out.Events.Nodes[i].ID)
		}
	}
	return out.Events
}

// readAll pages through a connection of events, first per page.
func readAll(t testing.TB, read func(vars map[string]any) eventConn, first int, vars map[string]any) ([]eventT, int) {
	t.Helper()
	var all []eventT
	total := -1
	var after any
	for {
		v := map[string]any{"first": first, "after": after}
		for k, x := range vars {
			v[k] = x
		}
		c := read(v)
		if total >= 0 && c.TotalCount != total {
			t.Fatalf("total moved from %d to %d while nothing was written", total, c.TotalCount)
		}
		total = c.TotalCount
		all = append(all, c.Nodes...)
		if !c.PageInfo.HasNextPage {
			return all, total
		}
		after = *c.PageInfo.EndCursor
	}
}

func kinds(evs []eventT) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func compactJSON(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHistoryAndEvents(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "History", "HIS")
		other := s.NewWorkspace(t, "Elsewhere", "ELS")
		p := createProc(t, s, w.MemberToken, procInput(w, "Rotate keys", obj("content", "step one")))
		ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { updateProcedure(id: $id, input: {content: "step two", priority: HIGH}) { id } }`,
			obj("id", p.ShortID)), &struct{}{})
		addComment(t, s, w.AdminToken, p.ID, "<looks> & right")
		theirs := createProc(t, s, other.MemberToken, procInput(other, "Their secret", nil))
		addComment(t, s, other.MemberToken, theirs.ID, "theirs")

		t.Run("Shape", func(t *testing.T) {
			h := history(t, s, w.ViewToken, p.ShortID, nil)
			if h.TotalCount != 3 || !slices.Equal(kinds(h.Nodes), []string{"COMMENT_CREATED", "PROCEDURE_UPDATED", "PROCEDURE_CREATED"}) {
				t.Fatalf("history %d: %v", h.TotalCount, kinds(h.Nodes))
			}
			comment, update, create := h.Nodes[0], h.Nodes[1], h.Nodes[2]
			if !(comment.Version > update.Version && update.Version > create.Version) {
				t.Fatalf("versions %d, %d, %d are not newest first", comment.Version, update.Version, create.Version)
			}
			if create.EntityType != "PROCEDURE" || create.EntityID != p.ID || *create.ProcedureID != p.ID || *create.ProjectID != w.ProjectID {
				t.Fatalf("create: %+v", create)
			}
			if comment.EntityType != "COMMENT" || comment.EntityID == p.ID || *comment.ProcedureID != p.ID {
				t.Fatalf("comment: %+v", comment)
			}
			if a := update.Actor; a.MemberID == nil || *a.MemberID != w.MemberID || a.Member == nil || a.Member.Name != "Max Member" || a.TokenID == nil {
				t.Fatalf("update's actor: %+v", a)
			}
			if a := comment.Actor; a.Member == nil || a.Member.Name != "Ada Admin" {
				t.Fatalf("comment's actor: %+v", a)
			}
			changes := map[string][2]string{}
			for _, c := range update.Changes {
				changes[c.Field] = [2]string{compactJSON(t, c.Before), compactJSON(t, c.After)}
			}
			if len(changes) != 2 || changes["priority"] != [2]string{`"MEDIUM"`, `"HIGH"`} ||
				!strings.HasPrefix(changes["content"][0], `{"sha256":`) || !strings.Contains(changes["content"][1], `"size":8`) {
				t.Fatalf("update's changes: %v", changes)
			}
			for _, c := range create.Changes {
				if string(c.Before) != "null" {
					t.Fatalf("a create's %s was %s before", c.Field, c.Before)
				}
			}
			raw := s.GraphQL(t, w.ViewToken, historyQuery, obj("id", p.ID))
			if strings.Contains(string(raw.Data), "step one") || strings.Contains(string(raw.Data), "looks") {
				t.Fatalf("the history shows a text itself: %s", raw.Data)
			}
			// The event as a node, and in the events list.
			var n struct {
				Node *struct {
					ID, Kind string
					Version  int
				}
			}
			ok(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { node(id: $id) { ... on Event { id kind version } } }`, obj("id", update.ID)), &n)
			if n.Node == nil || n.Node.Kind != "PROCEDURE_UPDATED" || n.Node.Version != update.Version {
				t.Fatalf("node: %+v", n.Node)
			}
			e := listEvents(t, s, w.ViewToken, obj("filter", obj("entityId", update.EntityID, "kinds", []string{"PROCEDURE_UPDATED"})))
			if e.TotalCount != 1 || e.Nodes[0].ID != update.ID {
				t.Fatalf("events of the update: %+v", e)
			}
		})

		t.Run("Paging", func(t *testing.T) {
			for i := 0; i < 9; i++ {
				ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!, $n: String) { updateProcedure(id: $id, input: {name: $n}) { id } }`,
					obj("id", p.ID, "n", fmt.Sprintf("Rotate keys %d", i))), &struct{}{})
			}
			want := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE procedure_id = ?", p.ID)
			all, total := readAll(t, func(v map[string]any) eventConn { return history(t, s, w.ViewToken, p.ID, v) }, 4, nil)
			if total != want || len(all) != want {
				t.Fatalf("history: %d read, total %d, COUNT %d", len(all), total, want)
			}
			for i := 1; i < len(all); i++ {
				if all[i].Version >= all[i-1].Version {
					t.Fatalf("history not newest first at %d", i)
				}
			}
			// Backward from the end: the same events.
			h := history(t, s, w.ViewToken, p.ID, obj("last", 4))
			if !h.PageInfo.HasPreviousPage || h.Nodes[len(h.Nodes)-1].ID != all[len(all)-1].ID {
				t.Fatalf("last 4: %v", kinds(h.Nodes))
			}
			// The workspace's events, oldest first after a version.
			mid := all[len(all)/2].Version
			feed, total := readAll(t, func(v map[string]any) eventConn { return listEvents(t, s, w.ViewToken, v) }, 3,
				obj("afterVersion", mid, "order", "ASC"))
			wantFeed := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE workspace_id = ? AND kind NOT LIKE 'token.%' AND version > ?", w.ID, mid)
			if total != wantFeed || len(feed) != wantFeed || feed[0].Version <= mid {
				t.Fatalf("feed after %d: %d read, total %d, COUNT %d", mid, len(feed), total, wantFeed)
			}
			for i := 1; i < len(feed); i++ {
				if feed[i].Version <= feed[i-1].Version {
					t.Fatalf("feed not oldest first at %d", i)
				}
			}
			// Filters, each against the database's count.
			for _, f := range []struct {
				filter map[string]any
				query  string
				arg    string
			}{
				{obj("procedureId", p.ID), "procedure_id = ?", p.ID},
				{obj("projectId", w.ProjectID), "project_id = ?", w.ProjectID},
				{obj("actorId", w.AdminID), "actor_member_id = ?", w.AdminID},
				{obj("kinds", []string{"MEMBER_ADDED"}), "kind = ?", "member.added"},
			} {
				evs, total := readAll(t, func(v map[string]any) eventConn { return listEvents(t, s, w.ViewToken, v) }, 5, obj("filter", f.filter))
				want := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE workspace_id = ? AND kind NOT LIKE 'token.%' AND "+f.query, w.ID, f.arg)
				if want == 0 || total != want || len(evs) != want {
					t.Fatalf("filter %v: %d read, total %d, COUNT %d", f.filter, len(evs), total, want)
				}
			}
		})

		t.Run("Tenancy", func(t *testing.T) {
			// A VIEWER reads no token's events (TestEventsFollowTheRolesOfTheirRecords).
			mine := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE workspace_id = ? AND kind NOT LIKE 'token.%'", w.ID)
			evs, total := readAll(t, func(v map[string]any) eventConn { return listEvents(t, s, w.ViewToken, v) }, 100, nil)
			if total != mine || len(evs) != mine {
				t.Fatalf("%d events listed, total %d; the workspace holds %d", len(evs), total, mine)
			}
			theirEvents := listEvents(t, s, other.ViewToken, obj("filter", obj("procedureId", theirs.ID)))
			if theirEvents.TotalCount != 2 {
				t.Fatalf("their own view: %d", theirEvents.TotalCount)
			}
			for _, e := range evs {
				if e.ProcedureID != nil && *e.ProcedureID == theirs.ID {
					t.Fatalf("another workspace's event %s listed", e.ID)
				}
			}
			if c := listEvents(t, s, w.ViewToken, obj("filter", obj("procedureId", theirs.ID))); c.TotalCount != 0 || len(c.Nodes) != 0 {
				t.Fatalf("another workspace's procedure's events: %+v", c)
			}
			wantError(t, s.GraphQL(t, w.ViewToken, historyQuery, obj("id", theirs.ID)), "not_found")
			var n struct{ Node *struct{ ID string } }
			ok(t, s.GraphQL(t, w.ViewToken, `query($id: ID!) { node(id: $id) { id } }`, obj("id", theirEvents.Nodes[0].ID)), &n)
			if n.Node != nil {
				t.Fatalf("another workspace's event as a node: %+v", n.Node)
			}
		})

		t.Run("DeletedProcedure", func(t *testing.T) {
			gone := createProc(t, s, w.MemberToken, procInput(w, "Short-lived", nil))
			ok(t, s.GraphQL(t, w.MemberToken, `mutation($id: ID!) { deleteProcedure(id: $id) { success } }`, obj("id", gone.ID)), &struct{}{})
			c := listEvents(t, s, w.ViewToken, obj("filter", obj("procedureId", gone.ID)))
			if c.TotalCount != 2 || c.Nodes[0].Kind != "PROCEDURE_DELETED" {
				t.Fatalf("a deleted procedure's events: %v", kinds(c.Nodes))
			}
		})

		// Retention deletes events without a write: no answer read before
		// may be served from the response cache after.
		t.Run("NotCachedPastPruning", func(t *testing.T) {
			const q = `query($id: ID!) { procedure(id: $id) { history { totalCount } } events { totalCount } }`
			read := func() (int, int) {
				var out struct {
					Procedure struct{ History struct{ TotalCount int } }
					Events    struct{ TotalCount int }
				}
				ok(t, s.GraphQL(t, w.ViewToken, q, obj("id", p.ID)), &out)
				return out.Procedure.History.TotalCount, out.Events.TotalCount
			}
			read()
			history, events := read()
			execSQL(t, db, "DELETE FROM events WHERE procedure_id = ? AND kind = 'procedure.created'", p.ID)
			if h, e := read(); h != history-1 || e != events-1 {
				t.Fatalf("after pruning an event: history %d (was %d), events %d (was %d)", h, history, e, events)
			}
		})

		t.Run("Refused", func(t *testing.T) {
			h := history(t, s, w.ViewToken, p.ID, obj("first", 1))
			cursor := *h.PageInfo.EndCursor
			q := createProc(t, s, w.MemberToken, procInput(w, "Other", nil))
			for _, row := range []struct {
				name, query string
				vars        map[string]any
				field       string
			}{
				{"a negative afterVersion", eventsQuery, obj("afterVersion", -1), "afterVersion"},
				{"an unknown kind", eventsQuery, obj("filter", obj("kinds", []string{"PROCEDURE_RENAMED"})), "kinds"},
				{"REST's spelling of a kind", eventsQuery, obj("filter", obj("kinds", []string{"procedure.updated"})), "kinds"},
				{"a malformed entity id", eventsQuery, obj("filter", obj("entityId", "nope")), "entityId"},
				{"a malformed actor id", eventsQuery, obj("filter", obj("actorId", "HIS-1")), "actorId"},
				{"a page over 100", eventsQuery, obj("first", 101), "first"},
				{"a cursor of a history", eventsQuery, obj("after", cursor), "after"},
				{"a malformed cursor", eventsQuery, obj("before", "x"), "before"},
				{"a history page over 100", historyQuery, obj("id", p.ID, "first", 101), "first"},
				{"first and last", historyQuery, obj("id", p.ID, "first", 1, "last", 1), "last"},
				{"another procedure's cursor", historyQuery, obj("id", q.ID, "after", cursor), "after"},
			} {
				t.Run(row.name, func(t *testing.T) {
					wantError(t, s.GraphQL(t, w.ViewToken, row.query, row.vars), "validation_failed", row.field)
				})
			}
			// A version older than the retention's horizon: events after
			// it are gone, and the client is told from where to read.
			execSQL(t, db, "UPDATE workspaces SET events_pruned_to = 5 WHERE id = ?", w.ID)
			r := s.GraphQL(t, w.ViewToken, eventsQuery, obj("afterVersion", 4))
			wantError(t, r, "validation_failed", "afterVersion")
			if !strings.Contains(r.Errors[0].Message, "version 5") {
				t.Fatalf("the message does not say where to read from: %s", r.Errors[0].Message)
			}
			if c := listEvents(t, s, w.ViewToken, obj("afterVersion", 5, "order", "ASC")); c.TotalCount == 0 {
				t.Fatal("nothing after the horizon")
			}
		})
	})
}

// TestHistoryStatementCount: the histories of a page of procedures (and
// of a project's procedures), with their totals and their actors'
// members, cost the same statements for 3 procedures as for 30: the list
// announces its procedures, the first history asked reads every one's.
func TestHistoryStatementCount(t *testing.T) {
	const query = `query($first: Int!) {
		procedures(first: $first) { nodes { id history(first: 3) { totalCount nodes { kind actor { member { name } } changes { field } } } } }
		projects(first: 5) { nodes { procedures(first: 3) { edges { node { history(last: 2) { totalCount edges { node { kind } } } } } } } }
	}`
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Counted", "CNT")
		_, token := memberWithToken(t, s, w, "Writer", "writer@cnt.example", "MEMBER")
		for i := 0; i < 30; i++ {
			p := createProc(t, s, token, procInput(w, fmt.Sprintf("p%d", i), nil))
			for j := 0; j < i%4; j++ {
				addComment(t, s, w.MemberToken, p.ID, "note")
			}
		}
		cost := func(first int) (int64, eventConnList) {
			t.Helper()
			var out eventConnList
			before := db.Statements()
			r := s.GraphQL(t, w.ViewToken, query, obj("first", first))
			n := db.Statements() - before
			ok(t, r, &out)
			return n, out
		}
		var counts []int64
		for _, first := range []int{3, 30} {
			// The token's first use records it (a write); the next read
			// fills that version's totals and shared edges.
			cost(first)
			cost(first)
			n, out := cost(first)
			if len(out.Procedures.Nodes) != first {
				t.Fatalf("%d procedures", len(out.Procedures.Nodes))
			}
			for _, p := range out.Procedures.Nodes {
				want := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE procedure_id = ?", p.ID)
				if p.History.TotalCount != want || len(p.History.Nodes) != min(3, want) {
					t.Fatalf("procedure %s: %d of %d events, COUNT %d", p.ID, len(p.History.Nodes), p.History.TotalCount, want)
				}
				for _, e := range p.History.Nodes {
					if e.Actor.Member == nil || e.Actor.Member.Name == "" {
						t.Fatalf("an event without its actor: %+v", e)
					}
				}
			}
			t.Logf("%s: %d procedures with their histories: %d statements", db.Dialect, first, n)
			counts = append(counts, n)
		}
		if counts[0] != counts[1] {
			t.Fatalf("3 procedures cost %d statements, 30 cost %d: a history is read per procedure", counts[0], counts[1])
		}
		// Steady: the token, the procedures' page, the projects' page and
		// their procedures' pages, and for each level of histories one
		// count grouped by procedure and one read of every page (the
		// actors are the version's shared members).
		if counts[0] != historyStatements {
			t.Fatalf("%d statements, want %d", counts[0], historyStatements)
		}
	})
}

// historyStatements is what TestHistoryStatementCount's query costs.
const historyStatements = 8

type eventConnList struct {
	Procedures struct {
		Nodes []struct {
			ID      string
			History eventConn
		}
	}
}

// TestEventsFollowTheRolesOfTheirRecords: Query.events and node show a role
// the token events (a token's name, member and expiry) only if Query.tokens
// answers it, whatever the filter, with totals that count what is shown;
// members' events every role reads, as Query.members.
func TestEventsFollowTheRolesOfTheirRecords(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Roles", "ROL")
		var created struct {
			CreateToken struct{ Token struct{ ID string } }
		}
		ok(t, s.GraphQL(t, w.AdminToken, `mutation { createToken(input: {name: "to revoke"}) { token { id } } }`, nil), &created)
		tokenID := created.CreateToken.Token.ID
		ok(t, s.GraphQL(t, w.AdminToken, `mutation($id: ID!) { revokeToken(id: $id) { id } }`, obj("id", tokenID)), &struct{}{})
		all := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE workspace_id = ?", w.ID)
		tokens := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE workspace_id = ? AND kind LIKE 'token.%'", w.ID)
		members := countSQL(t, db, "SELECT COUNT(*) FROM events WHERE workspace_id = ? AND kind = 'member.added'", w.ID)
		if tokens < 4 || members == 0 {
			t.Fatalf("the test data holds %d token events, %d members added", tokens, members)
		}
		var revoked struct{ Events eventConn }
		ok(t, s.GraphQL(t, w.AdminToken, eventsQuery, obj("filter", obj("kinds", []string{"TOKEN_REVOKED"}))), &revoked)
		if revoked.Events.TotalCount != 1 {
			t.Fatalf("the admin reads %d revocations", revoked.Events.TotalCount)
		}
		revocation := revoked.Events.Nodes[0].ID
		for role, token := range map[string]string{"ADMIN": w.AdminToken, "MEMBER": w.MemberToken, "VIEWER": w.ViewToken} {
			t.Run(role, func(t *testing.T) {
				// The rule to mirror: what Query.tokens answers this role.
				r := s.GraphQL(t, token, `{ tokens { id } }`, nil)
				readsTokens := len(r.Errors) == 0
				if !readsTokens {
					wantError(t, r, "forbidden")
				}
				want := all
				if !readsTokens {
					want -= tokens
				}
				evs, total := readAll(t, func(v map[string]any) eventConn { return listEvents(t, s, token, v) }, 5, nil)
				shown := 0
				for _, e := range evs {
					if strings.HasPrefix(e.Kind, "TOKEN_") {
						shown++
					}
				}
				if total != want || len(evs) != want || (shown > 0) != readsTokens {
					t.Fatalf("%d events read (%d of tokens), total %d, want %d", len(evs), shown, total, want)
				}
				for _, filter := range []map[string]any{
					obj("kinds", []string{"TOKEN_CREATED", "TOKEN_REVOKED"}),
					obj("entityId", tokenID),
				} {
					c := listEvents(t, s, token, obj("filter", filter))
					if (c.TotalCount > 0) != readsTokens || len(c.Nodes) != c.TotalCount {
						t.Fatalf("filter %v: %d shown, total %d, reads tokens: %v", filter, len(c.Nodes), c.TotalCount, readsTokens)
					}
				}
				var n struct{ Node *struct{ ID string } }
				ok(t, s.GraphQL(t, token, `query($id: ID!) { node(id: $id) { id } }`, obj("id", revocation)), &n)
				if (n.Node != nil) != readsTokens {
					t.Fatalf("a token's event as a node: %+v, reads tokens: %v", n.Node, readsTokens)
				}
				if c := listEvents(t, s, token, obj("filter", obj("kinds", []string{"MEMBER_ADDED"}))); c.TotalCount != members {
					t.Fatalf("members' events: %d, want %d", c.TotalCount, members)
				}
			})
		}
	})
}
