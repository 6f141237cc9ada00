package core_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestCommentsHaveNoCap: a procedure holds any number of comments. The
// 101st add succeeds, and so does the 10 001st, also many adds at once;
// the count the database keeps follows them, and the procedure's comments
// page through all of them: by page number deep into them (REST's), from
// the newest end, and past a cursor.
func TestCommentsHaveNoCap(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "MANY")
		// stored fails t unless p holds want comments, counted and as
		// its comment_count says.
		stored := func(t *testing.T, id uuid.UUID, want int) {
			t.Helper()
			n, err := db.Client.Comment.Query().Where(comment.ProcedureID(id)).Count(sys())
			if err != nil {
				t.Fatal(err)
			}
			p, err := db.Client.Procedure.Get(sys(), id)
			if err != nil {
				t.Fatal(err)
			}
			if n != want || p.CommentCount != want {
				t.Fatalf("%d comments stored, comment_count %d; want %d", n, p.CommentCount, want)
			}
		}
		// fill stores n comments on p directly, c0 … c<n-1>, oldest first
		// and older than any added through the service.
		fill := func(t *testing.T, id uuid.UUID, n int) {
			t.Helper()
			at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
			if err := bench.SeedComments(context.Background(), db.Client, f.boot.Workspace.ID, id, f.boot.Admin.ID, n, at,
				func(i int) string { return fmt.Sprintf("c%d", i) }); err != nil {
				t.Fatal(err)
			}
		}
		texts := func(l *core.CommentList) []string {
			out := make([]string, len(l.Items))
			for i, c := range l.Items {
				out[i] = c.Text
			}
			return out
		}
		cs := func(from, to int, more ...string) []string {
			out := []string{}
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("c%d", i))
			}
			return append(out, more...)
		}
		page := func(t *testing.T, id uuid.UUID, w core.Window) *core.CommentList {
			t.Helper()
			l, err := f.svc.ProcedureComments(f.admin, id, w)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		n := func(i int) *int { return &i }

		t.Run("PastAHundred", func(t *testing.T) {
			p := f.newProcedure(t, "a hundred", "TODO", f.project)
			fill(t, p.ID, 100)
			if _, err := f.svc.AddComment(f.admin, p.ShortID, "the 101st"); err != nil {
				t.Fatalf("add the 101st: %v", err)
			}
			stored(t, p.ID, 101)
		})

		t.Run("TenThousand", func(t *testing.T) {
			p := f.newProcedure(t, "ten thousand", "TODO", f.project)
			fill(t, p.ID, 10_000)
			if _, err := f.svc.AddComment(f.admin, p.ID.String(), "the 10 001st"); err != nil {
				t.Fatalf("add the 10 001st: %v", err)
			}
			stored(t, p.ID, 10_001)
			deep := page(t, p.ID, core.Window{First: n(100), Start: 9_900})
			if got := texts(deep); deep.Total != 10_001 || !slices.Equal(got, cs(9_900, 10_000)) || !deep.PageInfo.HasNextPage || !deep.PageInfo.HasPreviousPage {
				t.Fatalf("page 100 of 100: total %d, %d comments from %v, %+v", deep.Total, len(got), got[:1], deep.PageInfo)
			}
			last := page(t, p.ID, core.Window{First: n(100), Start: 10_000})
			if got := texts(last); !slices.Equal(got, []string{"the 10 001st"}) || last.PageInfo.HasNextPage {
				t.Fatalf("the last page: %v, %+v", got, last.PageInfo)
			}
			if past := page(t, p.ID, core.Window{First: n(100), Start: 10_100}); len(past.Items) != 0 || past.Total != 10_001 {
				t.Fatalf("past the end: %d comments, total %d", len(past.Items), past.Total)
			}
			newest := page(t, p.ID, core.Window{Last: n(3)})
			if got := texts(newest); !slices.Equal(got, cs(9_998, 10_000, "the 10 001st")) || !newest.PageInfo.HasPreviousPage {
				t.Fatalf("the newest 3: %v, %+v", got, newest.PageInfo)
			}
			at := deep.Cursor(deep.Items[len(deep.Items)-2])
			if got := texts(page(t, p.ID, core.Window{First: n(5), After: &at})); !slices.Equal(got, []string{"c9999", "the 10 001st"}) {
				t.Fatalf("after c9998's cursor: %v", got)
			}
		})

		t.Run("ConcurrentAdds", func(t *testing.T) {
			p := f.newProcedure(t, "raced", "TODO", f.project)
			fill(t, p.ID, 100)
			const racers = 12
			errs := make([]error, racers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = f.svc.AddComment(f.admin, p.ID.String(), fmt.Sprintf("racer %d", i))
				}()
			}
			close(start)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("racer: %v", err)
				}
			}
			stored(t, p.ID, 100+racers)
			var c *ent.Comment
			if c, errs[0] = db.Client.Comment.Query().Where(comment.ProcedureID(p.ID), comment.Text("racer 0")).Only(sys()); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if err := f.svc.DeleteComment(f.admin, c.ID.String()); err != nil {
				t.Fatal(err)
			}
			stored(t, p.ID, 100+racers-1)
		})
	})
}
