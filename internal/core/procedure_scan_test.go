package core_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// TestNestedProceduresAsEntReadsThem checks the nested lists' own scan of
// their rows (procedure_scan.go) against ent's scan of the same rows and
// columns, field by field, times with their locations, on both databases:
// for every parent and every group of columns a list may skip, with the
// nullable columns both NULL and set, and due dates written at an offset
// other than UTC's.
func TestNestedProceduresAsEntReadsThem(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := context.Background()
		sys := viewer.System(ctx)
		seeded, err := bench.Seed(ctx, db.Client, "Scan", "SCN", bench.Shape{Procedures: 80, Projects: 3, Categories: 3, Members: 4}, 11)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bench.Seed(ctx, db.Client, "Other", "OTH", bench.Shape{Procedures: 20, Projects: 2, Categories: 2, Members: 2}, 12); err != nil {
			t.Fatal(err)
		}
		ids, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(seeded.WorkspaceID)).Order(procedure.ByNumber()).IDs(sys)
		if err != nil {
			t.Fatal(err)
		}
		// Every third procedure loses its nullable columns; every fourth
		// gets a capture and a due date at +05:30.
		for i, id := range ids {
			u := db.Client.Procedure.UpdateOneID(id)
			if i%3 == 0 {
				u.ClearDoerID().ClearCategoryID().ClearContent()
			}
			if i%5 == 0 {
				// Free text holding the separator of a packed column.
				u.SetName(fmt.Sprintf("pipe|%d|in the name", i))
			}
			if i%4 == 0 {
				u.SetCaptureID("capture-" + id.String()[:8]).
					SetDueAt(time.Date(2027, 3, 1+i%27, 9, 30, 0, 123456000, time.FixedZone("", 5*3600+1800)))
			}
			if err := u.Exec(sys); err != nil {
				t.Fatal(err)
			}
		}
		vctx := viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: seeded.WorkspaceID, MemberID: seeded.MemberIDs[0], Role: viewer.RoleViewer})
		first := 100
		seen := map[string]bool{}
		for _, skip := range []core.ProcedureSkip{0, core.SkipSummary, core.SkipDetail, core.SkipSummary | core.SkipDetail} {
			var columns []string
			for _, c := range procedure.Columns {
				if skip&core.ProcedureColumnGroup(c) == 0 {
					columns = append(columns, c)
				}
			}
			for _, edge := range []core.Parent{core.ParentProject, core.ParentCategory, core.ParentDoer} {
				parents := seeded.ProjectIDs
				switch edge {
				case core.ParentCategory:
					parents = seeded.CategoryIDs
				case core.ParentDoer:
					parents = seeded.MemberIDs
				}
				// A fresh service: totals counted, not cached.
				pages, err := core.New(db.Client).FindProceduresOf(vctx, edge, parents, core.ProcedureFilter{}, core.ProcedureOrder{}, core.Window{First: &first}, skip)
				if err != nil {
					t.Fatal(err)
				}
				for _, parent := range parents {
					page := pages[parent]
					if page.Err != nil {
						t.Fatal(page.Err)
					}
					for _, got := range page.List.Items {
						want, err := db.Client.Procedure.Query().Where(procedure.ID(got.ID)).Select(columns...).Only(sys)
						if err != nil {
							t.Fatal(err)
						}
						if diff := differentFields(got, want); diff != "" {
							t.Fatalf("%s of %s %s, skipping %d: %s", got.ShortID, edge, parent, skip, diff)
						}
						seen[string(edge)] = true
						seen["doer nil"] = seen["doer nil"] || (skip == 0 && got.DoerID == nil)
						seen["capture set"] = seen["capture set"] || (skip == 0 && got.CaptureID != nil)
						seen["content nil"] = seen["content nil"] || (skip == 0 && got.Content == nil)
						_, offset := got.DueAt.Zone()
						seen["due at +05:30"] = seen["due at +05:30"] || (skip == 0 && offset == 5*3600+1800)
					}
				}
			}
		}
		want := []string{"project", "category", "doer", "doer nil", "capture set", "content nil"}
		if db.Dialect == dialect.SQLite {
			want = append(want, "due at +05:30") // PostgreSQL's timestamptz keeps the instant, not the offset
		}
		for _, what := range want {
			if !seen[what] {
				t.Errorf("no procedure compared with %s: the test checks less than it says", what)
			}
		}
	})
}

// differentFields describes how got's exported fields (its edges aside)
// differ from want's, "" if in nothing; times must be equal instants in
// locations of the same name.
func differentFields(got, want *ent.Procedure) string {
	g, w := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for i := range g.NumField() {
		f := g.Type().Field(i)
		if !f.IsExported() || f.Name == "Edges" {
			continue
		}
		x, y := g.Field(i).Interface(), w.Field(i).Interface()
		if tx, ok := x.(time.Time); ok {
			ty := y.(time.Time)
			if !tx.Equal(ty) || tx.Location().String() != ty.Location().String() {
				return f.Name + ": " + tx.String() + ", want " + ty.String()
			}
			continue
		}
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("%s: %s, want %s", f.Name, shown(g.Field(i)), shown(w.Field(i)))
		}
	}
	return ""
}

// shown is v, a pointer shown by what it points at.
func shown(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "nil"
		}
		v = v.Elem()
	}
	return fmt.Sprintf("%v", v.Interface())
}

// TestNestedReadOfAMalformedRowIsAnError: on SQLite, where a nested read
// packs a row's ids, times and enum values into one text, a stored time
// that breaks the packing (it holds the separator) fails the read with an
// error rather than a panic or a shifted field, as a time ent cannot read
// fails ent's; an enum value outside the schema's is read as it is stored,
// as ent reads it.
func TestNestedReadOfAMalformedRowIsAnError(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	sys := viewer.System(ctx)
	seeded, err := bench.Seed(ctx, db.Client, "Scan", "SCN", bench.Shape{Procedures: 6, Projects: 1, Categories: 1, Members: 1}, 11)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := db.Client.Procedure.Query().Where(procedure.WorkspaceID(seeded.WorkspaceID)).IDs(sys)
	if err != nil {
		t.Fatal(err)
	}
	vctx := viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: seeded.WorkspaceID, MemberID: seeded.MemberIDs[0], Role: viewer.RoleViewer})
	first := 10
	read := func() (map[uuid.UUID]core.NestedPage, error) {
		return core.New(db.Client).FindProceduresOf(vctx, core.ParentProject, seeded.ProjectIDs, core.ProcedureFilter{}, core.ProcedureOrder{}, core.Window{First: &first}, 0)
	}
	if _, err := db.SQL.ExecContext(ctx, "UPDATE procedures SET priority = 'URGENT' WHERE id = ?", ids[0]); err != nil {
		t.Fatal(err)
	}
	pages, err := read()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pages[seeded.ProjectIDs[0]].List.Items {
		if p.ID == ids[0] {
			found = p.Priority == "URGENT"
		}
	}
	if !found {
		t.Errorf("a priority outside the schema's was not read as stored")
	}
	if _, err := db.SQL.ExecContext(ctx, "UPDATE procedures SET due_at = '2027-01-01|00:00' WHERE id = ?", ids[1]); err != nil {
		t.Fatal(err)
	}
	if pages, err := read(); err == nil && pages[seeded.ProjectIDs[0]].Err == nil {
		t.Fatalf("a row whose time holds the separator read without an error")
	}
}
