package core_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
)

// TestCommentsPerProcedureBound: a procedure holds at most
// limits.CommentsPerProcedure comments. The next add is refused with
// conflict naming the bound and writes nothing, also when many adds race
// for the last places (the count is read under the workspace's lock); a
// procedure over the bound from before keeps its comments, and another
// procedure is not affected.
func TestCommentsPerProcedureBound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "CAP")
		count := func(t *testing.T, id uuid.UUID) int {
			t.Helper()
			n, err := db.Client.Comment.Query().Where(comment.ProcedureID(id)).Count(sys())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// fill stores n comments on p directly, as data written before the
		// bound would be.
		fill := func(t *testing.T, id uuid.UUID, n int) {
			t.Helper()
			for i := range n {
				if _, err := db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(id).
					SetAuthorID(f.boot.Admin.ID).SetText(fmt.Sprintf("c%d", i)).Save(sys()); err != nil {
					t.Fatal(err)
				}
			}
		}

		t.Run("NextAddRefused", func(t *testing.T) {
			p := f.newProcedure(t, "full", "TODO", f.project)
			fill(t, p.ID, limits.CommentsPerProcedure-1)
			if _, err := f.svc.AddComment(f.admin, p.ID.String(), "the last place"); err != nil {
				t.Fatalf("add %d: %v", limits.CommentsPerProcedure, err)
			}
			_, err := f.svc.AddComment(f.admin, p.ShortID, "one too many")
			wantCode(t, err, apperr.Conflict)
			if msg := apperr.From(err).Message; !strings.Contains(msg, fmt.Sprint(limits.CommentsPerProcedure)) || !strings.Contains(msg, p.ShortID) {
				t.Fatalf("message %q names neither the bound nor the procedure", msg)
			}
			if n := count(t, p.ID); n != limits.CommentsPerProcedure {
				t.Fatalf("%d comments stored, want %d", n, limits.CommentsPerProcedure)
			}
			other := f.newProcedure(t, "other", "TODO", f.project)
			if _, err := f.svc.AddComment(f.admin, other.ID.String(), "elsewhere"); err != nil {
				t.Fatalf("another procedure: %v", err)
			}
		})

		t.Run("ConcurrentAddsStopAtTheBound", func(t *testing.T) {
			p := f.newProcedure(t, "raced", "TODO", f.project)
			const free, racers = 3, 12
			fill(t, p.ID, limits.CommentsPerProcedure-free)
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
			added := 0
			for _, err := range errs {
				switch {
				case err == nil:
					added++
				case apperr.CodeOf(err) != apperr.Conflict:
					t.Fatalf("racer: %v", err)
				}
			}
			if added != free {
				t.Fatalf("%d of %d racers added a comment; %d places were free", added, racers, free)
			}
			if n := count(t, p.ID); n != limits.CommentsPerProcedure {
				t.Fatalf("%d comments stored, want %d", n, limits.CommentsPerProcedure)
			}
		})

		t.Run("OverTheBoundFromBefore", func(t *testing.T) {
			p := f.newProcedure(t, "legacy", "TODO", f.project)
			fill(t, p.ID, limits.CommentsPerProcedure+5)
			_, err := f.svc.AddComment(f.admin, p.ID.String(), "more")
			wantCode(t, err, apperr.Conflict)
			if n := count(t, p.ID); n != limits.CommentsPerProcedure+5 {
				t.Fatalf("%d comments kept, want %d", n, limits.CommentsPerProcedure+5)
			}
		})
	})
}
