package core

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
)

// TestFootprintTouchedBy pins the rules of docs/performance.md
// ("Invalidation by footprint") one by one; the server's tests compare
// cached and fresh responses under every kind of write.
func TestFootprintTouchedBy(t *testing.T) {
	ws, proj, other, cat := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	due := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	shown := &ent.Procedure{ID: uuid.New(), ProjectID: proj, State: procedure.StateTODO, Priority: procedure.PriorityLOW, DueAt: due}
	facets := func(state procedure.State, prio procedure.Priority, mod ...func(*Facets)) *Facets {
		f := &Facets{ProjectID: proj, State: state, Priority: prio, DueAt: due}
		for _, m := range mod {
			m(f)
		}
		return f
	}
	change := func(kind ChangeKind, before, after *Facets) Change {
		return Change{WorkspaceID: ws, Kind: kind, ProcedureID: uuid.New(), Before: before, After: after}
	}
	// reads: a page of the IN_PROGRESS list sorted by dueAt, showing
	// shown (from another list read), plus a search.
	footprint := func(lists ...ProcedureFilter) *Footprint {
		fp := NewFootprint()
		ctx := WithFootprint(context.Background(), fp)
		recordProcedure(ctx, shown)
		for _, f := range lists {
			pf, err := f.parse()
			if err != nil {
				t.Fatal(err)
			}
			recordList(ctx, pf, SortDueAt, nil, nil)
		}
		return fp
	}
	inProgress := ProcedureFilter{States: []string{"IN_PROGRESS"}}
	tests := []struct {
		name   string
		lists  []ProcedureFilter
		change Change
		want   bool
	}{
		{"ShownProcedureChanged", nil, Change{WorkspaceID: ws, Kind: ProcedureUpdated, ProcedureID: shown.ID,
			Before: facets("TODO", "LOW"), After: facets("TODO", "HIGH")}, true},
		{"ShownProcedureCommented", nil, Change{WorkspaceID: ws, Kind: ProcedureCommented, ProcedureID: shown.ID}, true},
		{"OtherProcedureCommented", []ProcedureFilter{inProgress}, change(ProcedureCommented, nil, facets("IN_PROGRESS", "LOW")), false},
		{"AccessChanged", nil, Change{WorkspaceID: ws, Kind: AccessChanged}, true},
		{"UnknownKind", nil, Change{WorkspaceID: ws, Kind: "RENAMED", ProcedureID: uuid.New()}, true},
		{"OutsideBeforeAndAfter", []ProcedureFilter{inProgress}, change(ProcedureUpdated, facets("TODO", "LOW"), facets("WAITING", "HIGH")), false},
		{"Enters", []ProcedureFilter{inProgress}, change(ProcedureUpdated, facets("TODO", "LOW"), facets("IN_PROGRESS", "LOW")), true},
		{"Leaves", []ProcedureFilter{inProgress}, change(ProcedureMoved, facets("IN_PROGRESS", "LOW"), facets("TODO", "LOW")), true},
		{"InsideSortKeyKept", []ProcedureFilter{inProgress}, change(ProcedureUpdated, facets("IN_PROGRESS", "LOW"), facets("IN_PROGRESS", "HIGH")), false},
		{"InsideSortKeyMoved", []ProcedureFilter{inProgress}, change(ProcedureUpdated, facets("IN_PROGRESS", "LOW"),
			facets("IN_PROGRESS", "LOW", func(f *Facets) { f.DueAt = due.Add(time.Hour) })), true},
		{"CreatedInside", []ProcedureFilter{inProgress}, change(ProcedureCreated, nil, facets("IN_PROGRESS", "LOW")), true},
		{"CreatedOutside", []ProcedureFilter{inProgress}, change(ProcedureCreated, nil, facets("TODO", "LOW")), false},
		{"DeletedInside", []ProcedureFilter{inProgress}, change(ProcedureDeleted, facets("IN_PROGRESS", "LOW"), nil), true},
		{"CreatedWithoutFacets", []ProcedureFilter{inProgress}, change(ProcedureCreated, nil, nil), true},
		{"OlderReplicaFacets", []ProcedureFilter{inProgress}, change(ProcedureUpdated, &Facets{ProjectID: proj, State: "TODO"}, &Facets{ProjectID: proj, State: "TODO"}), true},
		{"CategoryFilterEnters", []ProcedureFilter{{CategoryIDs: []string{cat.String()}}}, change(ProcedureUpdated, facets("TODO", "LOW"),
			facets("TODO", "LOW", func(f *Facets) { f.CategoryID = &cat })), true},
		{"ProjectFilterOther", []ProcedureFilter{{ProjectIDs: []string{other.String()}}}, change(ProcedureUpdated, facets("TODO", "LOW"), facets("TODO", "HIGH")), false},
		{"DueRangeLeaves", []ProcedureFilter{{DueTo: &due}}, change(ProcedureUpdated, facets("TODO", "LOW"),
			facets("TODO", "LOW", func(f *Facets) { f.DueAt = due.Add(time.Minute) })), true},
		{"SearchReworded", []ProcedureFilter{{Search: "x"}}, func() Change {
			c := change(ProcedureUpdated, facets("TODO", "LOW"), facets("TODO", "LOW"))
			c.Reworded = true
			return c
		}(), true},
		{"SearchNotReworded", []ProcedureFilter{{Search: "x", Priorities: []string{"LOW"}}}, change(ProcedureUpdated, facets("WAITING", "HIGH"), facets("TODO", "HIGH")), false},
		{"SearchMayEnter", []ProcedureFilter{{Search: "x", Priorities: []string{"LOW"}}}, change(ProcedureUpdated, facets("TODO", "HIGH"), facets("TODO", "LOW")), true},
		{"EitherStateEnters", []ProcedureFilter{{States: []string{"WAITING", "IN_PROGRESS"}}}, change(ProcedureUpdated, facets("TODO", "LOW"), facets("WAITING", "LOW")), true},
		{"EitherStateOutside", []ProcedureFilter{{States: []string{"WAITING", "IN_PROGRESS"}}}, change(ProcedureUpdated, facets("TODO", "LOW"), facets("COMPLETED", "LOW")), false},
		{"UnassignedEnters", []ProcedureFilter{{NoDoer: true}}, change(ProcedureUpdated, facets("TODO", "LOW", func(f *Facets) { f.DoerID = &cat }), facets("TODO", "LOW")), true},
		{"UnassignedOutside", []ProcedureFilter{{NoDoer: true}}, change(ProcedureUpdated, facets("TODO", "LOW", func(f *Facets) { f.DoerID = &cat }), facets("TODO", "HIGH", func(f *Facets) { f.DoerID = &cat })), false},
		{"MoveIntoShownColumn", nil, change(ProcedureMoved, facets("IN_PROGRESS", "LOW"), facets("TODO", "LOW")), true},
		{"MoveIntoOtherColumn", nil, change(ProcedureMoved, facets("TODO", "LOW"), facets("WAITING", "LOW")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := footprint(tt.lists...).TouchedBy(tt.change); got != tt.want {
				t.Fatalf("TouchedBy = %v; want %v", got, tt.want)
			}
		})
	}
}
