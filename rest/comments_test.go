package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestProcedureComments: a procedure embeds its newest
// limits.EmbeddedComments comments, oldest first; GET
// /procedures/{id}/comments pages through all of them, oldest first, with
// their total, by id or shortId; another workspace's procedure is 404 and
// a bad page 400.
func TestProcedureComments(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
		// seed gives a new procedure n comments, c0 (oldest) to c<n-1>.
		seed := func(n int) map[string]any {
			p := e.createProcedure(t, nil)
			id := uuid.MustParse(p["id"].(string))
			rows := make([]*ent.CommentCreate, n)
			for i := range rows {
				rows[i] = db.Client.Comment.Create().SetWorkspaceID(uuid.MustParse(e.ws.ID)).SetProcedureID(id).
					SetAuthorID(uuid.MustParse(e.ws.MemberID)).SetText(fmt.Sprintf("c%d", i)).
					SetCreatedAt(at.Add(time.Duration(i) * time.Minute)).SetUpdatedAt(at)
			}
			if n > 0 {
				if _, err := db.Client.Comment.CreateBulk(rows...).Save(viewer.System(context.Background())); err != nil {
					t.Fatal(err)
				}
			}
			return p
		}
		texts := func(items []map[string]any) []string {
			out := []string{}
			for _, c := range items {
				out = append(out, c["text"].(string))
			}
			return out
		}
		cs := func(from, to int) []string {
			out := []string{}
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("c%d", i))
			}
			return out
		}
		for _, n := range []int{0, 3, 25} {
			p := seed(n)
			id, short := p["id"].(string), p["shortId"].(string)
			t.Run(fmt.Sprintf("%dComments", n), func(t *testing.T) {
				got := wantOK(t, e.do(t, "GET", "/procedures/"+short, e.ws.ViewToken, nil))
				embedded := []string{}
				for _, c := range got["comments"].([]any) {
					embedded = append(embedded, c.(map[string]any)["text"].(string))
				}
				if want := cs(max(0, n-limits.EmbeddedComments), n); !slices.Equal(embedded, want) {
					t.Fatalf("embedded %v, want the newest %v", embedded, want)
				}
				var all []string
				for page := 1; ; page++ {
					items, total := wantList(t, e.do(t, "GET", fmt.Sprintf("/procedures/%s/comments?page=%d&limit=10", id, page), e.ws.ViewToken, nil), checkComment)
					if total != n {
						t.Fatalf("page %d: total %d, want %d", page, total, n)
					}
					if len(items) == 0 {
						break
					}
					all = append(all, texts(items)...)
				}
				if !slices.Equal(all, cs(0, n)) && n > 0 {
					t.Fatalf("paged %v, want %v", all, cs(0, n))
				}
				// The default page is 20, by shortId too.
				items, _ := wantList(t, e.do(t, "GET", "/procedures/"+short+"/comments", e.ws.ViewToken, nil), checkComment)
				if want := cs(0, min(n, 20)); !slices.Equal(texts(items), want) && n > 0 {
					t.Fatalf("default page %v, want %v", texts(items), want)
				}
			})
		}
		t.Run("ErrParameters", func(t *testing.T) {
			p := seed(1)
			path := "/procedures/" + p["id"].(string) + "/comments"
			wantError(t, e.do(t, "GET", path+"?limit=101", e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", "limit")
			wantError(t, e.do(t, "GET", path+"?page=0", e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", "page")
			wantError(t, e.do(t, "GET", path+"?search=x", e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", "search")
			wantError(t, e.do(t, "GET", path, "", nil), http.StatusUnauthorized, "unauthenticated", "")
		})
		t.Run("ErrOtherWorkspace", func(t *testing.T) {
			p := seed(2)
			other := e.srv.NewWorkspace(t, "Other", "OTH")
			r := e.do(t, "GET", "/procedures/"+p["id"].(string)+"/comments", other.ViewToken, nil)
			wantError(t, r, http.StatusNotFound, "not_found", "")
		})
	})
}
