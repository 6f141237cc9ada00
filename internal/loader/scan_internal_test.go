package loader

import (
	"slices"
	"testing"

	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/project"
)

// readComments scans its columns by hand: a column added to the schema must
// be added to it (and to its scan), or comments would be served without it.
func TestCommentColumns(t *testing.T) {
	got, want := slices.Clone(commentColumns), slices.Clone(comment.Columns)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("commentReader reads %v; the schema's comments have %v", got, want)
	}
}

// namedReader scans categories, members and projects by hand: a column
// added to one of their schemas must be given a slot (and a scan), or its
// records would be served without it, unless it is listed as unread (with
// why) in named.go.
func TestNamedColumns(t *testing.T) {
	for _, c := range []struct {
		table       string
		slots, want []string
	}{
		{"projects", projectSlots[:], project.Columns},
		{"categories", categorySlots[:], category.Columns},
		{"members", memberSlots[:], member.Columns},
	} {
		var got []string
		for _, s := range c.slots {
			if s != "" {
				got = append(got, s)
			}
		}
		want := slices.DeleteFunc(slices.Clone(c.want), func(col string) bool { return slices.Contains(unread[c.table], col) })
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("namedReader reads %v of %s; the schema has %v", got, c.table, want)
		}
	}
}
