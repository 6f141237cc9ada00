package core_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// explainRows is the workspace size of the plan test; EXPLAIN_ROWS overrides
// it for quicker local runs.
func explainRows() int {
	if os.Getenv("PROCSVC_EXPLAIN_ROWS") == "small" {
		return 20_000
	}
	return 100_000
}

// TestListPlansUseIndexes runs EXPLAIN on PostgreSQL, at 100 000 procedures
// in one workspace beside a noise workspace, for every statement that every
// list shape sends (page and total; no filter, each filter, search, each sort
// in both directions) and fails on any sequential scan of procedures.
func TestListPlansUseIndexes(t *testing.T) {
	dialects := dbtest.Dialects(t)
	if len(dialects) < 2 {
		t.Skip("plans are checked on PostgreSQL; set PROCSVC_TEST_POSTGRES")
	}
	db := dbtest.Open(t, "postgres")
	ctx := context.Background()
	rows := explainRows()
	seeded, err := bench.Seed(ctx, db.Client, "Plans", "PLN", bench.Shape{Procedures: rows, Projects: 50, Categories: 30, Members: 20, MaxComments: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"NOA", "NOB", "NOC", "NOD"} {
		if _, err := bench.Seed(ctx, db.Client, "Noise", key, bench.Shape{Procedures: rows / 4, Projects: 10, Categories: 5, Members: 5}, uint64(4+i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SQL.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
		t.Fatal(err)
	}
	vctx := viewer.NewContext(ctx, &viewer.Viewer{WorkspaceID: seeded.WorkspaceID, MemberID: seeded.MemberIDs[0], Role: viewer.RoleViewer})
	from, to := time.Now().AddDate(0, 0, -30), time.Now()
	shapes := map[string]core.ProcedureFilter{
		"NoFilter":   {},
		"Search":     {Search: "rollback"},
		"SearchID":   {Search: "PLN-4242"},
		"Category":   {CategoryIDs: []string{seeded.CategoryIDs[3].String()}},
		"Doer":       {DoerIDs: []string{seeded.MemberIDs[5].String()}},
		"Unassigned": {NoDoer: true},
		"Project":    {ProjectIDs: []string{seeded.ProjectIDs[7].String()}},
		"Projects":   {ProjectIDs: []string{seeded.ProjectIDs[7].String(), seeded.ProjectIDs[8].String()}},
		"State":      {States: []string{"WAITING"}},
		"States":     {States: []string{"WAITING", "TODO"}},
		"Priority":   {Priorities: []string{"HIGH"}},
		"DueWindow":  {DueFrom: &from, DueTo: &to},
		"Everything": {Search: "deploy", CategoryIDs: []string{seeded.CategoryIDs[1].String()}, States: []string{"TODO"}, Priorities: []string{"LOW"}, DueFrom: &from},
	}
	orders := []core.ProcedureOrder{}
	for _, f := range []core.ProcedureSort{core.SortCreatedAt, core.SortDueAt, core.SortName, core.SortProjectName} {
		orders = append(orders, core.ProcedureOrder{Field: f}, core.ProcedureOrder{Field: f, Desc: true})
	}
	var (
		mu    sync.Mutex
		stmts []database.Statement
	)
	db.Record(func(s database.Statement) {
		if strings.Contains(s.Query, `"procedures"`) {
			mu.Lock()
			stmts = append(stmts, s)
			mu.Unlock()
		}
	})
	first := 20
	for name, f := range shapes {
		for _, o := range orders {
			// A fresh service per shape: its totals cache is empty, so the
			// count statement is sent and checked too.
			svc := core.New(db.Client)
			list, err := svc.FindProcedures(vctx, f, o, core.Window{First: &first})
			if err != nil {
				t.Fatalf("%s %v: %v", name, o, err)
			}
			if n := len(list.Items); n > 0 {
				after := list.Cursor(list.Items[n-1])
				if _, err := svc.FindProcedures(vctx, f, o, core.Window{First: &first, After: &after}); err != nil {
					t.Fatalf("%s %v next page: %v", name, o, err)
				}
			}
			if _, err := svc.FindProcedures(vctx, f, o, core.Window{First: &first, Start: 5000}); err != nil {
				t.Fatalf("%s %v deep page: %v", name, o, err)
			}
			for _, edge := range []core.Parent{core.ParentProject, core.ParentCategory, core.ParentDoer} {
				parents := seeded.ProjectIDs[:5]
				switch edge {
				case core.ParentCategory:
					parents = seeded.CategoryIDs[:5]
				case core.ParentDoer:
					parents = seeded.MemberIDs[:5]
				}
				if _, err := svc.FindProceduresOf(vctx, edge, parents, f, o, core.Window{First: &first}, 0); err != nil {
					t.Fatalf("%s %v nested in %s: %v", name, o, edge, err)
				}
			}
		}
	}
	db.Record(nil)
	if len(stmts) == 0 {
		t.Fatal("no statements recorded")
	}
	seen := map[string]bool{}
	for _, s := range stmts {
		key := s.Query
		if seen[key] {
			continue
		}
		seen[key] = true
		var plan string
		if err := db.SQL.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+s.Query, s.Args...).Scan(&plan); err != nil {
			t.Fatalf("explain %s: %v", s.Query, err)
		}
		if scans := seqScans(t, plan); len(scans) > 0 {
			t.Errorf("sequential scan of %v in:\n%s\nplan: %s", scans, s.Query, plan)
		}
	}
	t.Logf("checked %d distinct statements at %d procedures", len(seen), rows)
	_ = uuid.Nil
}

// seqScans returns the relations a JSON plan reads with a sequential scan,
// among those that grow with the workspace.
func seqScans(t *testing.T, plan string) []string {
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Node Type"] == "Seq Scan" {
			if rel, _ := n["Relation Name"].(string); rel == "procedures" || rel == "comments" {
				out = append(out, rel)
			}
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
	return out
}
