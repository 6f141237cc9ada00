package core_test

// Delete rules: a procedure's comments go with it, a category's procedures
// are uncategorised, a project with procedures is a conflict.

import (
	"testing"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

func TestDeleteRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "DEL")

		t.Run("delete procedure removes its comments", func(t *testing.T) {
			doomed := f.newProcedure(t, "doomed", "TODO", f.project)
			kept := f.newProcedure(t, "kept", "TODO", f.project)
			var doomedComments []*ent.Comment
			for _, txt := range []string{"one", "two"} {
				c, err := f.svc.AddComment(f.admin, doomed.ID.String(), txt)
				if err != nil {
					t.Fatal(err)
				}
				doomedComments = append(doomedComments, c)
			}
			keptComment, err := f.svc.AddComment(f.admin, kept.ID.String(), "stays")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.svc.DeleteProcedure(f.admin, doomed.ID.String()); err != nil {
				t.Fatalf("DeleteProcedure: %v", err)
			}
			n, err := db.Client.Comment.Query().Where(comment.ProcedureID(doomed.ID)).Count(sys())
			if err != nil || n != 0 {
				t.Fatalf("comments of the deleted procedure: %d, %v; want 0", n, err)
			}
			for _, c := range doomedComments {
				_, err := f.svc.Comment(f.admin, c.ID.String())
				wantCode(t, err, apperr.NotFound)
			}
			if _, err := f.svc.Comment(f.admin, keptComment.ID.String()); err != nil {
				t.Fatalf("the other procedure's comment is gone: %v", err)
			}
			_, err = f.svc.Procedure(f.admin, doomed.ID.String())
			wantCode(t, err, apperr.NotFound)
			// Deleting again is not_found.
			wantCode(t, f.svc.DeleteProcedure(f.admin, doomed.ID.String()), apperr.NotFound)
		})

		t.Run("delete category uncategorises its procedures", func(t *testing.T) {
			doomedCat := f.newCategory(t, "doomed category")
			in1 := f.input("in1", "TODO", f.project)
			in1.CategoryID = doomedCat.ID.String()
			p1, err := f.svc.CreateProcedure(f.admin, in1)
			if err != nil {
				t.Fatal(err)
			}
			in2 := f.input("in2", "WAITING", f.project)
			in2.CategoryID = doomedCat.ID.String()
			p2, err := f.svc.CreateProcedure(f.admin, in2)
			if err != nil {
				t.Fatal(err)
			}
			untouched := f.newProcedure(t, "other category", "TODO", f.project)

			if err := f.svc.DeleteCategory(f.admin, doomedCat.ID.String()); err != nil {
				t.Fatalf("DeleteCategory: %v", err)
			}
			for _, p := range []*ent.Procedure{p1, p2} {
				got, err := f.svc.Procedure(f.admin, p.ID.String())
				if err != nil {
					t.Fatalf("procedure %s was deleted with its category: %v", p.Name, err)
				}
				if got.CategoryID != nil {
					t.Fatalf("procedure %s still has category %v", p.Name, *got.CategoryID)
				}
			}
			got, err := f.svc.Procedure(f.admin, untouched.ID.String())
			if err != nil || got.CategoryID == nil || *got.CategoryID != f.category.ID {
				t.Fatalf("unrelated procedure's category changed: %+v, %v", got, err)
			}
			_, err = f.svc.Category(f.admin, doomedCat.ID.String())
			wantCode(t, err, apperr.NotFound)
		})

		t.Run("delete project with procedures is a conflict", func(t *testing.T) {
			busy := f.newProject(t, "busy")
			p1 := f.newProcedure(t, "busy 1", "TODO", busy)
			f.newProcedure(t, "busy 2", "COMPLETED", busy)
			c, err := f.svc.AddComment(f.admin, p1.ID.String(), "note")
			if err != nil {
				t.Fatal(err)
			}
			before, _ := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)

			wantCode(t, f.svc.DeleteProject(f.admin, busy.ID.String()), apperr.Conflict)

			if _, err := f.svc.Project(f.admin, busy.ID.String()); err != nil {
				t.Fatalf("project deleted despite the conflict: %v", err)
			}
			n, err := db.Client.Procedure.Query().Where(procedure.ProjectID(busy.ID)).Count(sys())
			if err != nil || n != 2 {
				t.Fatalf("project has %d procedures after the refused delete (%v); want 2", n, err)
			}
			if _, err := f.svc.Comment(f.admin, c.ID.String()); err != nil {
				t.Fatalf("comment deleted despite the conflict: %v", err)
			}
			after, _ := db.Client.Workspace.Get(sys(), f.boot.Workspace.ID)
			if after.Version != before.Version {
				t.Fatalf("workspace version moved from %d to %d on a refused delete", before.Version, after.Version)
			}

			// Once empty it may go.
			for _, p := range f.column(t, busy, "TODO") {
				if err := f.svc.DeleteProcedure(f.admin, p.ID.String()); err != nil {
					t.Fatal(err)
				}
			}
			wantCode(t, f.svc.DeleteProject(f.admin, busy.ID.String()), apperr.Conflict)
			for _, p := range f.column(t, busy, "COMPLETED") {
				if err := f.svc.DeleteProcedure(f.admin, p.ID.String()); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.svc.DeleteProject(f.admin, busy.ID.String()); err != nil {
				t.Fatalf("DeleteProject of an empty project: %v", err)
			}
			_, err = f.svc.Project(f.admin, busy.ID.String())
			wantCode(t, err, apperr.NotFound)
		})
	})
}
