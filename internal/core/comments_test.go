package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
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

// TestDeepCommentPagesSkipByIndex: REST's page 100 of a procedure of
// 10 000 comments skips the 9 900 before it in the index alone
// (commentsFrom), not by OFFSET, which would fetch and sort every
// skipped row, text and all (49 ms rather than 2.5 ms on PostgreSQL). On
// PostgreSQL, EXPLAIN ANALYZE reads the page's rows, and no more, from the
// table, the skipped ones' keys by an index-only scan; on SQLite, the plan
// reads the skipped keys from the covering index and the page as an index
// range, with no sort.
func TestDeepCommentPagesSkipByIndex(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "DEEP")
		p := f.newProcedure(t, "deep", "TODO", f.project)
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := bench.SeedComments(context.Background(), db.Client, f.boot.Workspace.ID, p.ID, f.boot.Admin.ID, 10_000, at,
			func(i int) string { return fmt.Sprintf("c%d", i) }); err != nil {
			t.Fatal(err)
		}
		if db.Dialect == dialect.Postgres {
			// As autovacuum leaves a table: its visibility map set, so
			// that an index-only scan reads no row.
			if _, err := db.SQL.ExecContext(context.Background(), "VACUUM ANALYZE comments"); err != nil {
				t.Fatal(err)
			}
		}
		var stmts []database.Statement
		db.Record(func(s database.Statement) {
			if strings.Contains(s.Query, "comments") && strings.Contains(s.Query, "OFFSET") {
				stmts = append(stmts, s)
			}
		})
		first := 100
		l, err := f.svc.ProcedureComments(f.admin, p.ID, core.Window{First: &first, Start: 9_900})
		db.Record(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 100 || l.Items[0].Text != "c9900" || l.Items[99].Text != "c9999" || len(stmts) != 1 {
			t.Fatalf("%d comments from %v, %d statements", len(l.Items), l.Items[0].Text, len(stmts))
		}
		s := stmts[0]
		if db.Dialect == dialect.Postgres {
			var plan string
			if err := db.SQL.QueryRowContext(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+s.Query, s.Args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			var doc []struct{ Plan map[string]any }
			if err := json.Unmarshal([]byte(plan), &doc); err != nil {
				t.Fatal(err)
			}
			rows, keys := 0, 0
			var walk func(n map[string]any)
			walk = func(n map[string]any) {
				switch kind, _ := n["Node Type"].(string); {
				case kind == "Sort" || kind == "Seq Scan":
					t.Fatalf("%s in the plan:\n%s", kind, plan)
				case n["Relation Name"] == "comments":
					read, _ := n["Actual Rows"].(float64)
					loops, _ := n["Actual Loops"].(float64)
					if fetches, _ := n["Heap Fetches"].(float64); kind == "Index Only Scan" {
						keys += int(read * loops)
						rows += int(fetches)
					} else {
						rows += int(read * loops)
					}
				}
				kids, _ := n["Plans"].([]any)
				for _, k := range kids {
					if m, ok := k.(map[string]any); ok {
						walk(m)
					}
				}
			}
			for _, d := range doc {
				walk(d.Plan)
			}
			t.Logf("%d rows of comments read, %d keys from the index alone", rows, keys)
			if rows > 101 {
				t.Fatalf("page 100 read %d rows of comments (%d keys from the index alone):\n%s", rows, keys, plan)
			}
			return
		}
		r, err := db.SQL.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+s.Query, s.Args...)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var plan []string
		for r.Next() {
			var id, parent, unused int
			var detail string
			if err := r.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		all := strings.Join(plan, "\n")
		t.Logf("plan:\n%s", all)
		if strings.Contains(all, "SCAN ") || strings.Contains(all, "TEMP B-TREE") ||
			!strings.Contains(all, "USING COVERING INDEX comment_procedure_id_created_at_id (procedure_id=?)") {
			t.Fatalf("want the skipped keys read from the covering index and the page as an index range, unsorted:\n%s", all)
		}
	})
}
