package loader_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// The comments a viewer's loaders read are exactly ent's for the viewer's
// workspace, field for field and in the same order; another workspace's
// procedures have none, and a context without a viewer reads nothing.
func TestCommentsAsEntReadsThem(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		shape := bench.Shape{Procedures: 30, Projects: 2, Categories: 2, Members: 3, MaxComments: 4}
		a, b := seedTwo(t, db, shape)
		procsOf := func(ws uuid.UUID) []*ent.Procedure {
			procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(ws)).
				WithComments(func(q *ent.CommentQuery) { q.Order(comment.ByCreatedAt(), comment.ByID()) }).All(sys)
			if err != nil {
				t.Fatal(err)
			}
			return procs
		}
		// Seeded comments were created in id order; reversed here, so
		// that an order by id alone would differ from ent's.
		seededA, err := db.Client.Comment.Query().Where(comment.WorkspaceID(a.WorkspaceID)).Order(comment.ByID()).All(sys)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range seededA {
			at := c.CreatedAt.Add(-time.Duration(i) * time.Minute)
			query := "UPDATE comments SET created_at = ? WHERE id = ?"
			if db.Dialect == dialect.Postgres {
				query = "UPDATE comments SET created_at = $1 WHERE id = $2"
			}
			if _, err := db.SQL.ExecContext(sys, query, at, c.ID); err != nil { // created_at is immutable to ent
				t.Fatal(err)
			}
		}
		procsA, procsB := procsOf(a.WorkspaceID), procsOf(b.WorkspaceID)
		var commented int
		for _, p := range procsA {
			if len(p.Edges.Comments) > 1 {
				commented++
			}
		}
		if commented == 0 {
			t.Fatal("no procedure with two comments or more: the order is not checked")
		}
		// A comment in b of a's procedure cannot exist; one of b's
		// procedures is asked for by a's viewer below, as a forged id
		// would be.
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		run := func(ctx context.Context, fn func(ctx context.Context)) {
			loader.Middleware(db)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { fn(r.Context()) })).
				ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		}
		run(asA, func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, append(procsA, procsB...), loader.Edges{Comments: true}); err != nil {
				t.Fatal(err)
			}
			for _, p := range procsA {
				got, _, err := loader.Comments(ctx, p.ID, loader.CommentWindow{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				want := p.Edges.Comments
				if len(got) != len(want) {
					t.Fatalf("%s: %d comments, want %d", p.ShortID, len(got), len(want))
				}
				for i, w := range want {
					g := got[i]
					if g.ID != w.ID || g.WorkspaceID != w.WorkspaceID || g.ProcedureID != w.ProcedureID || g.AuthorID != w.AuthorID ||
						g.Text != w.Text || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) ||
						g.CreatedAt.Location() != w.CreatedAt.Location() {
						t.Fatalf("%s: comment %d = %+v, want %+v", p.ShortID, i, g, w)
					}
				}
			}
			for _, p := range procsB {
				if got, _, err := loader.Comments(ctx, p.ID, loader.CommentWindow{}, 0); err != nil || got == nil || len(got) != 0 {
					t.Fatalf("a's viewer reading b's %s: %v, %v; want no comments", p.ShortID, got, err)
				}
			}
		})
		run(context.Background(), func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, procsA, loader.Edges{Comments: true}); err != viewer.ErrNoViewer {
				t.Fatalf("without a viewer: %v, want %v", err, viewer.ErrNoViewer)
			}
		})
	})
}

// A page's comments are read in one statement for every window its views
// take: a view the read covers costs nothing more, one it does not is read
// through the dataloader; a procedure of more comments than a page shows
// its newest limits.CommentPage by default. The text one request
// reads stops at its bound with payload_too_large, and a Reset (a
// mutation's next root field) starts it afresh.
func TestCommentWindows(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		a, _ := seedTwo(t, db, bench.Shape{Procedures: 2, Projects: 1, Categories: 1, Members: 1})
		procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(a.WorkspaceID)).Order(procedure.ByShortID()).All(sys)
		if err != nil || len(procs) != 2 {
			t.Fatalf("%d procedures: %v", len(procs), err)
		}
		small, long := procs[0], procs[1]
		author, err := db.Client.Member.Query().Where(member.WorkspaceID(a.WorkspaceID)).First(sys)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[uuid.UUID]int{small.ID: 7, long.ID: limits.CommentPage + 5}
		at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
		for _, p := range procs {
			// Replace what the seed wrote: c0, c1, … a second apart.
			if _, err := db.Client.Comment.Delete().Where(comment.ProcedureID(p.ID)).Exec(sys); err != nil {
				t.Fatal(err)
			}
			builders := make([]*ent.CommentCreate, counts[p.ID])
			for i := range builders {
				builders[i] = db.Client.Comment.Create().SetWorkspaceID(a.WorkspaceID).SetProcedureID(p.ID).SetAuthorID(author.ID).
					SetText(fmt.Sprintf("c%d", i)).SetCreatedAt(at.Add(time.Duration(i) * time.Second))
			}
			if _, err := db.Client.Comment.CreateBulk(builders...).Save(sys); err != nil {
				t.Fatal(err)
			}
		}
		span := func(from, to int) []string {
			out := []string{}
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("c%d", i))
			}
			return out
		}
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		run := func(fn func(ctx context.Context), opts ...loader.Option) {
			loader.Middleware(db, opts...)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { fn(r.Context()) })).
				ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(asA))
		}
		over := counts[long.ID]
		run(func(ctx context.Context) {
			window := loader.CommentWindow{First: 2}.Union(loader.CommentWindow{Last: 3})
			before := db.Statements()
			if err := loader.PrimeProcedures(ctx, procs, loader.Edges{Comments: true, CommentWindow: window}); err != nil {
				t.Fatal(err)
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("priming two views of two procedures' comments ran %d statements", n)
			}
			for _, c := range []struct {
				p    *ent.Procedure
				view loader.CommentWindow
				want []string
			}{
				{small, loader.CommentWindow{First: 2}, span(0, 2)},
				{small, loader.CommentWindow{Last: 3}, span(4, 7)},
				{small, loader.CommentWindow{First: 1}, span(0, 1)},
				{long, loader.CommentWindow{First: 1}, span(0, 1)},
				{long, loader.CommentWindow{Last: 3}, span(over-3, over)},
			} {
				got, _, err := loader.Comments(ctx, c.p.ID, c.view, 0)
				if err != nil || !slices.Equal(texts(got), c.want) {
					t.Fatalf("%s %+v: %v, %v; want %v", c.p.ShortID, c.view, texts(got), err, c.want)
				}
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("views the read covers ran %d more statements", n-1)
			}
			// Not covered: the long procedure's default view, its newest
			// limits.CommentPage, read through the dataloader.
			got, _, err := loader.Comments(ctx, long.ID, loader.CommentWindow{}, 0)
			if err != nil || !slices.Equal(texts(got), span(over-limits.CommentPage, over)) {
				t.Fatalf("default view of %s: %d comments, %v", long.ShortID, len(got), err)
			}
			if n := db.Statements() - before; n != 2 {
				t.Fatalf("a view the read did not cover ran %d statements in all, want 2", n)
			}
		})
		// A procedure read whole (the default view holds its 7 comments)
		// covers every view.
		run(func(ctx context.Context) {
			if err := loader.PrimeProcedures(ctx, []*ent.Procedure{small}, loader.Edges{Comments: true}); err != nil {
				t.Fatal(err)
			}
			before := db.Statements()
			for _, view := range []loader.CommentWindow{{First: 50}, {Last: 1}, {First: 7}} {
				if _, _, err := loader.Comments(ctx, small.ID, view, 0); err != nil {
					t.Fatal(err)
				}
			}
			if n := db.Statements() - before; n != 0 {
				t.Fatalf("views of a procedure read whole ran %d statements", n)
			}
		})
		// 105 comments of 2 or 3 bytes each: 265 bytes of text.
		run(func(ctx context.Context) {
			err := loader.PrimeProcedures(ctx, []*ent.Procedure{long}, loader.Edges{Comments: true})
			if err == nil || apperr.CodeOf(err) != apperr.PayloadTooLarge {
				t.Fatalf("over the bound on text: %v", err)
			}
			loader.Reset(ctx)
			if err := loader.PrimeProcedures(ctx, []*ent.Procedure{small}, loader.Edges{Comments: true}); err != nil {
				t.Fatalf("after a Reset: %v", err)
			}
		}, loader.MaxCommentText(100))
	})
}

// TestCommentWindowsAreBounded: a procedure holds any number of comments,
// and a page of procedures reads only the windows of them it shows: a page
// of 100 procedures, three of which hold 10 000 comments each, is read in
// one statement showing each procedure's oldest 2 and newest 3 with its
// total, and the statement reads at most those rows, not the 30 000 the
// three hold: it returns no more (the request's bound on comment text is
// set just above theirs), and reads no more (PostgreSQL: EXPLAIN ANALYZE
// counts the rows read from comments and procedures; SQLite: EXPLAIN QUERY
// PLAN shows the procedures read by id, each end's ids read as an index
// range by a subquery, and the comments they name by primary key).
func TestCommentWindowsAreBounded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		a, _ := seedTwo(t, db, bench.Shape{Procedures: 100, Projects: 2, Categories: 1, Members: 2})
		procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(a.WorkspaceID)).Order(procedure.ByNumber()).All(sys)
		if err != nil || len(procs) != 100 {
			t.Fatalf("%d procedures: %v", len(procs), err)
		}
		const heavy = 10_000
		// Three of 10 000, and some about the window's 5: fewer, as many,
		// one more.
		counts := map[uuid.UUID]int{procs[3].ID: heavy, procs[50].ID: heavy, procs[99].ID: heavy,
			procs[4].ID: 4, procs[5].ID: 1, procs[6].ID: 5, procs[7].ID: 6}
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for id, n := range counts {
			if err := bench.SeedComments(sys, db.Client, a.WorkspaceID, id, a.MemberIDs[0], n, at,
				func(i int) string { return fmt.Sprintf("c%d", i) }); err != nil {
				t.Fatal(err)
			}
		}
		if db.Dialect == dialect.Postgres {
			if _, err := db.SQL.ExecContext(sys, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		span := func(from, to int) []string {
			out := []string{}
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("c%d", i))
			}
			return out
		}
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		var stmts []database.Statement
		// The text of what the page shows is 87 bytes: a bound of 100 on
		// the text the request reads fails it if the statement returns
		// more rows than the windows take.
		loader.Middleware(db, loader.MaxCommentText(100))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			window := loader.CommentWindow{First: 2}.Union(loader.CommentWindow{Last: 3})
			before := db.Statements()
			db.Record(func(s database.Statement) { stmts = append(stmts, s) })
			err := loader.PrimeProcedures(ctx, procs, loader.Edges{Comments: true, CommentWindow: window})
			db.Record(nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := db.Statements() - before; n != 1 || len(stmts) != 1 {
				t.Fatalf("priming a page's comments ran %d statements", n)
			}
			for _, p := range procs {
				n := counts[p.ID]
				first, total, err := loader.Comments(ctx, p.ID, loader.CommentWindow{First: 2}, 0)
				if err != nil {
					t.Fatal(err)
				}
				last, _, err := loader.Comments(ctx, p.ID, loader.CommentWindow{Last: 3}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := texts(first), span(0, min(n, 2)); total != n || !slices.Equal(got, want) {
					t.Fatalf("%s: oldest %v of %d, want %v of %d", p.ShortID, got, total, want, n)
				}
				if got, want := texts(last), span(max(n-3, 0), n); !slices.Equal(got, want) {
					t.Fatalf("%s: newest %v, want %v", p.ShortID, got, want)
				}
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("the views ran %d more statements", n-1)
			}
		})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(asA))

		s := stmts[0]
		if db.Dialect == dialect.Postgres {
			var plan string
			if err := db.SQL.QueryRowContext(sys, "EXPLAIN (ANALYZE, FORMAT JSON) "+s.Query, s.Args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			read, procsRead := rowsRead(t, plan, "comments"), rowsRead(t, plan, "procedures")
			t.Logf("rows read: %d of comments, %d of procedures", read, procsRead)
			// Five of each procedure's comments at most, and the page's
			// procedures.
			if read > 5*len(procs) || procsRead > len(procs) {
				t.Fatalf("the statement read %d rows of comments and %d of procedures for a page of %d procedures showing 5 comments each:\n%s",
					read, procsRead, len(procs), plan)
			}
			return
		}
		rows, err := db.SQL.QueryContext(sys, "EXPLAIN QUERY PLAN "+s.Query, s.Args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		t.Logf("plan:\n%s", strings.Join(plan, "\n"))
		var ranges, byID int
		for _, d := range plan {
			switch {
			case strings.HasPrefix(d, "SCAN "):
				t.Fatalf("a scan: %q", d)
			case strings.HasPrefix(d, "SEARCH procedures ") && !strings.Contains(d, "(id=?)"):
				t.Fatalf("procedures read otherwise than by id: %q", d)
			case strings.Contains(d, "comments USING COVERING INDEX comment_procedure_id_created_at_id (procedure_id=?)"):
				ranges++
			case strings.HasPrefix(d, "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"):
				byID++
			}
		}
		if ranges != 2 || byID != 2 || !strings.Contains(strings.Join(plan, "\n"), "CORRELATED LIST SUBQUERY") {
			t.Fatalf("want each end's rows read from the index by a correlated subquery (%d), and their comments by rowid (%d)", ranges, byID)
		}
	})
}

// rowsRead sums the rows a JSON plan of EXPLAIN ANALYZE read from rel, over
// every loop of every node that scans it.
func rowsRead(t *testing.T, plan, rel string) int {
	t.Helper()
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatal(err)
	}
	total := 0
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if r, _ := n["Relation Name"].(string); r == rel {
			rows, _ := n["Actual Rows"].(float64)
			loops, _ := n["Actual Loops"].(float64)
			total += int(rows * loops)
		}
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				if m, ok := k.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	for _, d := range doc {
		walk(d.Plan)
	}
	return total
}

// texts are the texts of cs.
func texts(cs []*ent.Comment) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
	}
	return out
}

// TestSQLiteCommentStatementsStayCompiled: on SQLite the comment reader's
// statement, prepared once per connection, runs again for a page of other
// procedures without being compiled again, for each window shape, confined
// to a workspace or not. With each end's LIMIT bound as a parameter, SQLite
// compiled it again on every run for a page of 50 procedures (3 to 7
// compiles a read here; not for 10, whose plan does not weigh the LIMIT).
func TestSQLiteCommentStatementsStayCompiled(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	sys := viewer.System(context.Background())
	a, err := bench.Seed(sys, db.Client, "Acme", "ACME", bench.Shape{Procedures: 300, Projects: 3, Categories: 2, Members: 2, MaxComments: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(a.WorkspaceID)).Order(procedure.ByShortID()).IDs(sys)
	if err != nil || len(procs) != 300 {
		t.Fatalf("%d procedures: %v", len(procs), err)
	}
	// With statistics, as the server runs: SQLite weighs a LIMIT's value
	// only when it has them.
	if err := db.RefreshStatistics(sys); err != nil {
		t.Fatal(err)
	}
	asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
	compiles := dbtest.CountCompiles(t, db)
	for _, ctx := range []context.Context{sys, asA} {
		for _, w := range []loader.CommentWindow{{First: 2}, {Last: 2}, {First: 1, Last: 1}} {
			read := func(keys []uuid.UUID) int {
				t.Helper()
				n, err := loader.ReadComments(ctx, db, keys, w)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			read(procs[:50])
			before := compiles.Load()
			if n := read(procs[50:100]); n == 0 {
				t.Fatalf("window %+v read no comments: nothing is tested", w)
			}
			if n := compiles.Load() - before; n != 0 {
				t.Errorf("window %+v (viewer %v): the statement was compiled %d more times for other procedures; want none", w, ctx == asA, n)
			}
			// The read of procedures counted with few comments, whose
			// text is the same for any number of them.
			whole := func(keys []uuid.UUID) int {
				t.Helper()
				n, complete, err := loader.ReadWholeComments(ctx, db, keys, loader.CommentWindow{First: 3})
				if err != nil || !complete {
					t.Fatalf("whole read: complete %v, %v", complete, err)
				}
				return n
			}
			whole(procs[:50])
			before = compiles.Load()
			if n := whole(procs[100:130]); n == 0 {
				t.Fatal("the whole read read no comments: nothing is tested")
			}
			if n := compiles.Load() - before; n != 0 {
				t.Errorf("whole read (viewer %v): compiled %d more times for other procedures; want none", ctx == asA, n)
			}
		}
	}
}

// A read that skips column groups leaves exactly their fields zero, and
// every other field, the workspace included (not read when the read is
// confined to one), is what ent reads. A primed page serves every view that
// shows no more than it holds, without a statement; a view that shows more
// is read again.
func TestCommentsReadWithoutWhatIsNotShown(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		a, err := bench.Seed(sys, db.Client, "Acme", "ACME", bench.Shape{Procedures: 20, Projects: 2, Categories: 2, Members: 3, MaxComments: 4}, 1)
		if err != nil {
			t.Fatal(err)
		}
		// Every comment edited later than it was written: a field read
		// from the wrong column differs.
		if err := db.Client.Comment.Update().SetUpdatedAt(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)).Exec(sys); err != nil {
			t.Fatal(err)
		}
		procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(a.WorkspaceID)).
			WithComments(func(q *ent.CommentQuery) { q.Order(comment.ByCreatedAt(), comment.ByID()) }).All(sys)
		if err != nil {
			t.Fatal(err)
		}
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
		window := loader.CommentWindow{First: 4}
		for _, base := range []context.Context{sys, asA} {
			for _, skip := range []loader.CommentSkip{0, loader.SkipCommentAuthor, loader.SkipCommentUpdatedAt, loader.SkipCommentAuthor | loader.SkipCommentUpdatedAt} {
				name := fmt.Sprintf("skip %b, confined %v", skip, base == asA)
				inRequestAs(t, db, base, func(ctx context.Context) {
					if err := loader.PrimeProcedures(ctx, procs, loader.Edges{Comments: true, CommentWindow: window, CommentSkip: skip}); err != nil {
						t.Fatal(err)
					}
					before := db.Statements()
					read := 0
					for _, p := range procs {
						got, _, err := loader.Comments(ctx, p.ID, window, skip)
						if err != nil || len(got) != len(p.Edges.Comments) {
							t.Fatalf("%s: %d comments of %s, %v; want %d", name, len(got), p.ShortID, err, len(p.Edges.Comments))
						}
						for i, c := range got {
							want := *p.Edges.Comments[i]
							if skip&loader.SkipCommentAuthor != 0 {
								want.AuthorID = uuid.Nil
							}
							if skip&loader.SkipCommentUpdatedAt != 0 {
								want.UpdatedAt = time.Time{}
							}
							if c.ID != want.ID || c.WorkspaceID != want.WorkspaceID || c.ProcedureID != want.ProcedureID || c.AuthorID != want.AuthorID ||
								c.Text != want.Text || !c.CreatedAt.Equal(want.CreatedAt) || !c.UpdatedAt.Equal(want.UpdatedAt) {
								t.Fatalf("%s: read %+v\nwant %+v", name, *c, want)
							}
							read++
						}
					}
					if read == 0 {
						t.Fatalf("%s: no comments read: nothing is tested", name)
					}
					if n := db.Statements() - before; n != 0 {
						t.Fatalf("%s: primed comments cost %d statements, want 0", name, n)
					}
					// A view that shows every column reads again unless the
					// page holds them all; one that shows less never does.
					before = db.Statements()
					if _, _, err := loader.Comments(ctx, procs[0].ID, window, 0); err != nil {
						t.Fatal(err)
					}
					if n := db.Statements() - before; (n != 0) != (skip != 0) {
						t.Fatalf("%s: a view of every column cost %d statements", name, n)
					}
					before = db.Statements()
					if _, _, err := loader.Comments(ctx, procs[1].ID, window, loader.SkipCommentAuthor|loader.SkipCommentUpdatedAt); err != nil {
						t.Fatal(err)
					}
					if n := db.Statements() - before; n != 0 {
						t.Fatalf("%s: a view of fewer columns cost %d statements", name, n)
					}
				})
			}
		}
		// Priming again for a view that shows more reads the page again,
		// once, with every comment and column both views show: the first
		// view is still served from it.
		inRequestAs(t, db, asA, func(ctx context.Context) {
			lean := loader.Edges{Comments: true, CommentWindow: loader.CommentWindow{Last: 1}, CommentSkip: loader.SkipCommentAuthor | loader.SkipCommentUpdatedAt}
			if err := loader.PrimeProcedures(ctx, procs, lean); err != nil {
				t.Fatal(err)
			}
			before := db.Statements()
			if err := loader.PrimeProcedures(ctx, procs, loader.Edges{Comments: true, CommentWindow: loader.CommentWindow{First: 1}, CommentSkip: loader.SkipCommentAuthor}); err != nil {
				t.Fatal(err)
			}
			if n := db.Statements() - before; n != 1 {
				t.Fatalf("priming for a view of more columns cost %d statements, want 1", n)
			}
			before = db.Statements()
			for _, p := range procs {
				for _, v := range []struct {
					w    loader.CommentWindow
					skip loader.CommentSkip
				}{{lean.CommentWindow, lean.CommentSkip}, {loader.CommentWindow{First: 1}, loader.SkipCommentAuthor}} {
					if _, _, err := loader.Comments(ctx, p.ID, v.w, v.skip); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := db.Statements() - before; n != 0 {
				t.Fatalf("both views after the second priming cost %d statements, want 0", n)
			}
		})
	})
}

// inRequestAs runs fn in a request's loaders, as base's viewer.
func inRequestAs(t *testing.T, db *database.DB, base context.Context, fn func(ctx context.Context)) {
	t.Helper()
	h := loader.Middleware(db)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if v := viewer.FromContext(base); v != nil {
			ctx = viewer.NewContext(ctx, v)
		} else {
			ctx = viewer.System(ctx)
		}
		fn(ctx)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
}
