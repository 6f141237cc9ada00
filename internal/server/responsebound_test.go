package server_test

// The review's amplifications through the whole handler, on both databases:
// one request may not multiply its output past the bound on a response
// (--max-response-mb, 16 MiB): a GraphQL query or REST list over it is
// answered 413 payload_too_large, charged what its complexity says; a
// mutation's committed write is never answered as failed.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

func TestResponseBound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := context.Background()
		clk := newClock()
		// The clock stands still: each request's charge is what the
		// bucket loses.
		s := limitedServer(t, db, clk, "--rate-limit", "1", "--rate-burst", "1000")
		w := s.NewWorkspace(t, "Bound", "BND")
		admin, err := s.Service.ActAsAdmin(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		longest := strings.Repeat("x", limits.Content)
		create := func(t *testing.T, name, content string) *ent.Procedure {
			t.Helper()
			due := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			p, err := s.Service.CreateProcedure(admin, core.CreateProcedureInput{Name: name, Priority: "LOW", State: "TODO", DueAt: &due,
				CategoryID: w.CategoryID, DoerID: w.MemberID, ProjectID: w.ProjectID, Content: content})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		big := create(t, "big", longest)
		remaining := -1
		// charged returns what the last request spent of the token's
		// bucket.
		charged := func(t *testing.T, h http.Header) int {
			t.Helper()
			n, err := strconv.Atoi(h.Get("RateLimit-Remaining"))
			if err != nil {
				t.Fatalf("RateLimit-Remaining %q", h.Get("RateLimit-Remaining"))
			}
			spent := remaining - n
			remaining = n
			return spent
		}
		charged(t, s.GraphQL(t, w.ViewToken, `{ __typename }`, nil).Header)
		tooLarge := func(t *testing.T, r *apitest.GQLResponse, ask string) {
			t.Helper()
			if r.Status != http.StatusRequestEntityTooLarge || len(r.Data) != 0 || len(r.Errors) != 1 || r.Code() != "payload_too_large" {
				t.Fatalf("status %d, data %.100s, errors %+v; want 413, one payload_too_large error and no data", r.Status, r.Data, r.Errors)
			}
			if msg := r.Errors[0].Message; !strings.Contains(msg, "16 MiB") || !strings.Contains(msg, ask) {
				t.Fatalf("message %q names neither the bound nor how to ask for less (%q)", msg, ask)
			}
		}

		// 100 aliases of one 200 000-character record rendered 20 MB for 2
		// tokens: refused, still charged its complexity (an object per alias).
		t.Run("AliasesOfOneRecord", func(t *testing.T) {
			var q strings.Builder
			q.WriteString("{")
			for i := range 100 {
				fmt.Fprintf(&q, " a%d: procedure(id: %q) { content }", i, big.ID)
			}
			q.WriteString(" }")
			r := s.GraphQL(t, w.ViewToken, q.String(), nil)
			tooLarge(t, r, "fewer fields")
			if n := charged(t, r.Header); n != 1 {
				t.Fatalf("charged %d, want 1 (complexity 100)", n)
			}
		})

		t.Run("RepeatedIds", func(t *testing.T) {
			ids := make([]string, 100)
			for i := range ids {
				ids[i] = big.ID.String()
			}
			r := s.GraphQL(t, w.ViewToken, `query($ids: [ID!]!) { nodes(ids: $ids) { ... on Procedure { content } } }`, map[string]any{"ids": ids})
			if r.Status != http.StatusBadRequest || r.Code() != "validation_failed" || len(r.Data) != 0 {
				t.Fatalf("status %d %+v", r.Status, r.Errors)
			}
			if n := charged(t, r.Header); n != 1 {
				t.Fatalf("charged %d, want 1 (refused before its cost is known)", n)
			}
		})

		t.Run("PageOfContents", func(t *testing.T) {
			// 85 records of 200 000 characters: 17 MB.
			for i := range 84 {
				create(t, fmt.Sprintf("big %d", i), longest)
			}
			r := s.GraphQL(t, w.ViewToken, `{ procedures(first: 100) { nodes { content } } }`, nil)
			tooLarge(t, r, "smaller pages")
			if n := charged(t, r.Header); n != 2 {
				t.Fatalf("charged %d, want 2 (complexity 101)", n)
			}
			a := restGet(t, s, w.ViewToken, "/procedures?limit=100")
			if a.status != http.StatusRequestEntityTooLarge || a.code != "payload_too_large" {
				t.Fatalf("REST page of 100: %d %s", a.status, a.code)
			}
			if n := charged(t, a.header); n != 1 {
				t.Fatalf("REST charged %d, want 1", n)
			}
			for _, path := range []string{"/procedures?limit=50", "/procedures/" + big.ID.String()} {
				if a := restGet(t, s, w.ViewToken, path); a.status != http.StatusOK {
					t.Fatalf("%s: %d %s", path, a.status, a.code)
				}
				charged(t, a.header)
			}
		})

		t.Run("PageOfComments", func(t *testing.T) {
			other := s.NewWorkspace(t, "Talk", "TALK")
			oadmin, err := s.Service.ActAsAdmin(ctx, other.ID)
			if err != nil {
				t.Fatal(err)
			}
			longComment := strings.Repeat("y", limits.Comment)
			due := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			// 9 procedures of a page (limits.CommentPage) of comments of
			// 20 000 characters: 18 MB.
			for i := range 9 {
				p, err := s.Service.CreateProcedure(oadmin, core.CreateProcedureInput{Name: fmt.Sprintf("talk %d", i), Priority: "LOW", State: "TODO",
					DueAt: &due, CategoryID: other.CategoryID, DoerID: other.MemberID, ProjectID: other.ProjectID})
				if err != nil {
					t.Fatal(err)
				}
				builders := make([]*ent.CommentCreate, limits.CommentPage)
				for j := range builders {
					builders[j] = db.Client.Comment.Create().SetWorkspaceID(uuid.MustParse(other.ID)).SetProcedureID(p.ID).
						SetAuthorID(uuid.MustParse(other.MemberID)).SetText(longComment)
				}
				if _, err := db.Client.Comment.CreateBulk(builders...).Save(viewer.System(ctx)); err != nil {
					t.Fatal(err)
				}
			}
			remaining = -1
			charged(t, s.GraphQL(t, other.ViewToken, `{ __typename }`, nil).Header)
			// The comments stop being read once past the bound.
			r := s.GraphQL(t, other.ViewToken, `{ procedures(first: 9) { nodes { comments(first: 100) { nodes { text } } } } }`, nil)
			tooLarge(t, r, "fewer procedures")
			if n := charged(t, r.Header); n != 10 {
				t.Fatalf("charged %d, want 10 (complexity 1 + 9 × (1 + 1 + 100) = 919)", n)
			}
			// REST embeds each procedure's newest limits.EmbeddedComments
			// (9 × 20 × 20 000 characters): within the bound.
			if a := restGet(t, s, other.ViewToken, "/procedures?limit=9"); a.status != http.StatusOK {
				t.Fatalf("REST: %d %s", a.status, a.code)
			}
			// Fewer comments each fit: 9 × 40 × 20 000 characters.
			r = s.GraphQL(t, other.ViewToken, `{ procedures(first: 9) { nodes { comments(last: 40) { nodes { text } } } } }`, nil)
			if r.Status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("40 comments each: %d %+v", r.Status, r.Errors)
			}
		})

		// A procedure holds any number of comments, more text than any
		// response may (1 000 of 20 000 characters: 20 MB): what shows it
		// shows a page of them, and fits.
		t.Run("ProcedureOfMoreThanTheBound", func(t *testing.T) {
			p, err := s.Service.CreateProcedure(admin, core.CreateProcedureInput{Name: "long-running", Priority: "LOW", State: "TODO",
				DueAt: &big.DueAt, CategoryID: w.CategoryID, DoerID: w.MemberID, ProjectID: w.ProjectID})
			if err != nil {
				t.Fatal(err)
			}
			longComment := strings.Repeat("z", limits.Comment)
			if err := bench.SeedComments(ctx, db.Client, uuid.MustParse(w.ID), p.ID, uuid.MustParse(w.MemberID), 1000,
				time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), func(int) string { return longComment }); err != nil {
				t.Fatal(err)
			}
			a := restGet(t, s, w.ViewToken, "/procedures/"+p.ID.String())
			if a.status != http.StatusOK || len(a.body) > (limits.EmbeddedComments+1)*limits.Comment {
				t.Fatalf("REST GET: %d %s, %d bytes", a.status, a.code, len(a.body))
			}
			charged(t, a.header)
			r := s.GraphQL(t, w.ViewToken, `query($id: ID!) { procedure(id: $id) { comments(last: 100) { totalCount nodes { text } } } }`,
				map[string]any{"id": p.ID.String()})
			if r.Status != http.StatusOK || len(r.Errors) > 0 || len(r.Data) > (limits.CommentPage+1)*limits.Comment {
				t.Fatalf("GraphQL: %d, %d bytes, %+v", r.Status, len(r.Data), r.Errors)
			}
			charged(t, r.Header)
		})

		// A mutation's field whose result passes the bound committed: it is
		// null with its error below it; the fields after it do not run.
		t.Run("MutationCommitsAndSaysSo", func(t *testing.T) {
			var q strings.Builder
			fmt.Fprintf(&q, `mutation { u: updateProcedure(id: %q, input: {name: "renamed"}) { name`, big.ID)
			for i := range 90 {
				fmt.Fprintf(&q, " a%d: content", i)
			}
			q.WriteString(` } c: createCategory(input: {name: "never"}) { id } }`)
			r := s.GraphQL(t, w.MemberToken, q.String(), nil)
			if r.Status != http.StatusOK || string(r.Data) != `{"u":null,"c":null}` || len(r.Errors) != 2 {
				t.Fatalf("status %d, data %.200s, errors %+v", r.Status, r.Data, r.Errors)
			}
			for i, want := range []string{"u", "c"} {
				e := r.Errors[i]
				below := len(e.Path) == 2
				if e.Extensions.Code != "payload_too_large" || len(e.Path) == 0 || e.Path[0] != want || below != (want == "u") {
					t.Fatalf("error %d: %+v", i, e)
				}
			}
			if !strings.Contains(r.Errors[0].Message, "committed") || !strings.Contains(r.Errors[1].Message, "did not run") {
				t.Fatalf("messages: %q, %q", r.Errors[0].Message, r.Errors[1].Message)
			}
			stored, err := s.Service.Procedure(admin, big.ID.String())
			if err != nil || stored.Name != "renamed" {
				t.Fatalf("the write that passed the bound: %v, %v", stored, err)
			}
			if n := countRows(t, db, "categories WHERE name = 'never'"); n != 0 {
				t.Fatalf("the field after the bound ran: %d categories", n)
			}
		})

		// The bound is the server's: 32 MiB lets the 20 MB answer through.
		t.Run("Flag", func(t *testing.T) {
			wide := limitedServer(t, db, clk, "--rate-limit", "0", "--max-response-mb", "32")
			var q strings.Builder
			q.WriteString("{")
			for i := range 100 {
				fmt.Fprintf(&q, " a%d: procedure(id: %q) { content }", i, big.ID)
			}
			q.WriteString(" }")
			r := wide.GraphQL(t, w.ViewToken, q.String(), nil)
			if r.Status != http.StatusOK || len(r.Errors) > 0 || len(r.Data) < 100*limits.Content {
				t.Fatalf("status %d, %d bytes, %+v", r.Status, len(r.Data), r.Errors)
			}
		})
	})
}
