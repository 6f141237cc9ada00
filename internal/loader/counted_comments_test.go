package loader_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Procedures primed as a list read them (loader.PrimeListed, their rows'
// comment counts known) show exactly the comments and totals of the same
// procedures primed without counts, which looks each one up again, for
// every window and column group; the page costs one statement, none when
// no procedure holds a comment. A count that is no longer true by the
// comments' read (comments added since) still answers with what the
// procedure holds, up to the bound the counts promise; past it the page
// is read as without counts, in a second statement. Another workspace's
// procedures show nothing.
func TestCountedCommentsAnswerAsLookedUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		sys := viewer.System(context.Background())
		a, b := seedTwo(t, db, bench.Shape{Procedures: 40, Projects: 2, Categories: 2, Members: 3, MaxComments: 8})
		procsOf := func(ws uuid.UUID) []*ent.Procedure {
			procs, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(ws)).Order(procedure.ByShortID()).All(sys)
			if err != nil {
				t.Fatal(err)
			}
			return procs
		}
		procsA, procsB := procsOf(a.WorkspaceID), procsOf(b.WorkspaceID)
		asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})

		// shown is what a request shows of procs' comments through view
		// w, primed by prime, and the statements the prime cost.
		type answer struct {
			rows  []string
			total int
		}
		shown := func(t *testing.T, prime func(context.Context, []*ent.Procedure, loader.Edges) error, procs []*ent.Procedure,
			w loader.CommentWindow, skip loader.CommentSkip) (map[uuid.UUID]answer, int64) {
			t.Helper()
			out := make(map[uuid.UUID]answer, len(procs))
			var statements int64
			inRequestAs(t, db, asA, func(ctx context.Context) {
				before := db.Statements()
				if err := prime(ctx, procs, loader.Edges{Comments: true, CommentWindow: w, CommentSkip: skip}); err != nil {
					t.Fatal(err)
				}
				statements = db.Statements() - before
				for _, p := range procs {
					got, total, err := loader.Comments(ctx, p.ID, w, skip)
					if err != nil {
						t.Fatal(err)
					}
					var rows []string
					for _, c := range got {
						rows = append(rows, fmt.Sprintf("%s %s %s %s %s %s %s", c.ID, c.WorkspaceID, c.ProcedureID, c.AuthorID, c.Text,
							c.CreatedAt.Format("2006-01-02T15:04:05.999999999Z07:00 MST"), c.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00 MST")))
					}
					out[p.ID] = answer{rows, total}
				}
				if after := db.Statements() - before; after != statements {
					t.Fatalf("the views cost %d statements beyond the prime", after-statements)
				}
			})
			return out, statements
		}
		same := func(t *testing.T, got, want map[uuid.UUID]answer) {
			t.Helper()
			for id, w := range want {
				g := got[id]
				if g.total != w.total || fmt.Sprint(g.rows) != fmt.Sprint(w.rows) {
					t.Fatalf("procedure %s: %d of %d %v; want %d of %d %v", id, len(g.rows), g.total, g.rows, len(w.rows), w.total, w.rows)
				}
			}
		}
		fits := func(procs []*ent.Procedure, w loader.CommentWindow) (out []*ent.Procedure) {
			n := w.First + w.Last
			if n == 0 {
				n = loader.DefaultCommentWindow.First + loader.DefaultCommentWindow.Last
			}
			for _, p := range procs {
				if p.CommentCount <= n {
					out = append(out, p)
				}
			}
			return out
		}

		var wholeReads, windowedReads int
		for _, w := range []loader.CommentWindow{{}, {First: 5}, {Last: 3}, {First: 2, Last: 2}, {First: 1}} {
			for _, skip := range []loader.CommentSkip{0, loader.RESTComments} {
				t.Run(fmt.Sprintf("%+v skip %d", w, skip), func(t *testing.T) {
					for _, procs := range [][]*ent.Procedure{fits(procsA, w), procsA, append(fits(procsA, w), procsB...)} {
						want, _ := shown(t, loader.PrimeProcedures, procs, w, skip)
						got, n := shown(t, loader.PrimeListed, procs, w, skip)
						same(t, got, want)
						if n != 1 {
							t.Fatalf("%d procedures primed with their counts cost %d statements; want 1", len(procs), n)
						}
						if len(fits(procs, w)) == len(procs) {
							wholeReads++
						} else {
							windowedReads++
						}
					}
				})
			}
		}
		if wholeReads == 0 || windowedReads == 0 {
			t.Fatalf("%d pages read whole, %d windowed: both must be tested", wholeReads, windowedReads)
		}

		var none, some, many *ent.Procedure
		for _, p := range procsA {
			switch {
			case p.CommentCount == 0 && none == nil:
				none = p
			case p.CommentCount >= 3 && p.CommentCount <= 5 && some == nil:
				some = p
			case p.CommentCount >= 7 && many == nil:
				many = p
			}
		}
		if none == nil || some == nil || many == nil {
			t.Fatal("the seed lacks a procedure without comments, one of 3 to 5 or one of 7 or more")
		}
		t.Run("no comments", func(t *testing.T) {
			got, n := shown(t, loader.PrimeListed, []*ent.Procedure{none}, loader.CommentWindow{First: 5}, 0)
			if n != 0 || got[none.ID].total != 0 || len(got[none.ID].rows) != 0 {
				t.Fatalf("a procedure counted without comments: %d statements, %+v; want none and nothing", n, got[none.ID])
			}
		})
		// stale is p as read before some of its comments were added.
		stale := func(p *ent.Procedure, count int) *ent.Procedure {
			c := *p
			c.CommentCount = count
			return &c
		}
		t.Run("counted fewer, within the window", func(t *testing.T) {
			w := loader.CommentWindow{First: 5}
			want, _ := shown(t, loader.PrimeProcedures, []*ent.Procedure{some}, w, 0)
			got, n := shown(t, loader.PrimeListed, []*ent.Procedure{stale(some, 1)}, w, 0)
			same(t, got, want)
			if n != 1 || got[some.ID].total != some.CommentCount {
				t.Fatalf("%d statements, total %d; want 1 and %d", n, got[some.ID].total, some.CommentCount)
			}
		})
		t.Run("counted fewer, past the bound", func(t *testing.T) {
			w := loader.CommentWindow{First: 2}
			want, _ := shown(t, loader.PrimeProcedures, []*ent.Procedure{many}, w, 0)
			got, n := shown(t, loader.PrimeListed, []*ent.Procedure{stale(many, 1)}, w, 0)
			same(t, got, want)
			if n != 2 || got[many.ID].total != many.CommentCount || len(got[many.ID].rows) != 2 {
				t.Fatalf("%d statements, %d of %d; want 2, and 2 of %d", n, len(got[many.ID].rows), got[many.ID].total, many.CommentCount)
			}
		})
		t.Run("counted none", func(t *testing.T) {
			// The count is the row's: a procedure read before its first
			// comment shows none, as its row (and the list's totals) did.
			got, n := shown(t, loader.PrimeListed, []*ent.Procedure{stale(some, 0)}, loader.CommentWindow{First: 5}, 0)
			if n != 0 || got[some.ID].total != 0 || len(got[some.ID].rows) != 0 {
				t.Fatalf("%d statements, %+v; want none and nothing", n, got[some.ID])
			}
		})
	})
}

// TestPackedCommentOfAMalformedRowIsAnError: on SQLite the whole read packs
// a comment's ids and time into one text (commentScanner); a stored time
// that holds the separator fails the read with an error, neither a panic
// nor a comment of shifted fields. A comment text holding it is read as
// it is: texts are never packed.
func TestPackedCommentOfAMalformedRowIsAnError(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	sys := viewer.System(context.Background())
	a, err := bench.Seed(sys, db.Client, "Acme", "ACME", bench.Shape{Procedures: 20, Projects: 1, Categories: 1, Members: 1, MaxComments: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := db.Client.Comment.Query().Where(comment.WorkspaceID(a.WorkspaceID)).All(sys)
	if err != nil || len(cs) < 2 {
		t.Fatalf("%d comments: %v", len(cs), err)
	}
	asA := viewer.NewContext(context.Background(), &viewer.Viewer{WorkspaceID: a.WorkspaceID, Role: viewer.RoleViewer})
	keys := []uuid.UUID{cs[0].ProcedureID}
	if _, err := db.SQL.ExecContext(sys, "UPDATE comments SET text = 'a|b|c' WHERE id = ?", cs[0].ID); err != nil {
		t.Fatal(err)
	}
	if n, complete, err := loader.ReadWholeComments(asA, db, keys, loader.CommentWindow{First: 5}); err != nil || !complete || n == 0 {
		t.Fatalf("a text holding the separator: %d comments, complete %v, %v", n, complete, err)
	}
	if _, err := db.SQL.ExecContext(sys, "UPDATE comments SET created_at = '2026-12-06|07:00' WHERE id = ?", cs[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loader.ReadWholeComments(asA, db, keys, loader.CommentWindow{First: 5}); err == nil {
		t.Fatal("a comment whose time holds the separator read without an error")
	}
}
