package loader

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/tenancy"
)

// A page names categories, members and projects: small rows of three
// tables, which ent reads in a statement each. namedReader reads them in
// one, a UNION ALL of the three tables laid out in common slots, and scans
// the rows by hand. Each table's slots must name every column of its table:
// TestNamedColumns fails when the schema gains one;
// TestNamedAsEntReadsThem compares what it reads with ent's own read.
//
// Tenancy is internal/tenancy's, as the tenant interceptor applies it: each
// branch is confined to the viewer's workspace, a context without a viewer
// reads nothing, and the system context (no tenancy) is left to ent.

// namedKeys are ids of the three edges.
type namedKeys struct {
	categories, members, projects []uuid.UUID
}

func (k namedKeys) empty() bool {
	return len(k.categories) == 0 && len(k.members) == 0 && len(k.projects) == 0
}

// named are records of the three edges by id; nil for an id not visible.
type named struct {
	categories map[uuid.UUID]*ent.Category
	members    map[uuid.UUID]*ent.Member
	projects   map[uuid.UUID]*ent.Project
}

// The slots of a row after its kind: id, workspace_id, name, two text
// columns and four times. A table's column in each slot ("" is NULL). The
// projects branch, when there is one, comes first: SQLite types a compound
// select's columns after its first branch, and projects have a time column
// in every time slot, so that each time is read as one.
var (
	projectSlots = [...]string{project.FieldID, project.FieldWorkspaceID, project.FieldName, "", "",
		project.FieldCreatedAt, project.FieldUpdatedAt, project.FieldStartedAt, project.FieldDueAt}
	categorySlots = [...]string{category.FieldID, category.FieldWorkspaceID, category.FieldName, "", "",
		category.FieldCreatedAt, category.FieldUpdatedAt, "", ""}
	memberSlots = [...]string{member.FieldID, member.FieldWorkspaceID, member.FieldName, member.FieldEmail, member.FieldRole,
		member.FieldCreatedAt, member.FieldRemovedAt, "", ""}
)

// unread are the columns namedReader leaves out on purpose: what no answer
// shows, that a record served by the loaders never needs. A member's link to
// an identity provider's person, and the person an admin unlinked from it,
// are internal/auth's, read there.
var unread = map[string][]string{
	member.Table: {member.FieldOidcIssuer, member.FieldOidcSubject, member.FieldOidcUnlinkedIssuer, member.FieldOidcUnlinkedSubject},
}

// The kinds, the first column of every row.
const (
	kindProject = iota + 1
	kindCategory
	kindMember
)

type namedReader struct {
	db *database.DB
	// selects are each table's branch up to its WHERE clause.
	selects [kindMember + 1]string
}

func newNamedReader(db *database.DB) *namedReader {
	r := &namedReader{db: db}
	nullText, nullTime := "NULL", "NULL"
	if db.Dialect == dialect.Postgres {
		// PostgreSQL resolves a UNION's column types pairwise, and would
		// take two untyped NULLs for text.
		nullText, nullTime = "CAST(NULL AS text)", "CAST(NULL AS timestamptz)"
	}
	branch := func(kind int, table string, slots []string) string {
		var b strings.Builder
		b.WriteString("SELECT " + strconv.Itoa(kind))
		for i, c := range slots {
			switch {
			case c != "" && i >= 5 && db.Dialect == dialect.SQLite:
				// An expression: the driver hands its text over to
				// database.NullTime unparsed (database.Time).
				b.WriteString(`, +"` + c + `"`)
			case c != "":
				b.WriteString(`, "` + c + `"`)
			case i < 5:
				b.WriteString(", " + nullText)
			default:
				b.WriteString(", " + nullTime)
			}
		}
		b.WriteString(` FROM "` + table + `"`)
		return b.String()
	}
	r.selects[kindProject] = branch(kindProject, project.Table, projectSlots[:])
	r.selects[kindCategory] = branch(kindCategory, category.Table, categorySlots[:])
	r.selects[kindMember] = branch(kindMember, member.Table, memberSlots[:])
	return r
}

// read returns the records of k that ctx's viewer can see, answering every
// key. ok is false for the system context, which this reader does not serve.
func (r *namedReader) read(ctx context.Context, k namedKeys) (found named, ok bool, err error) {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil || !scoped {
		return named{}, scoped, err
	}
	var (
		q    strings.Builder
		args []any
	)
	pg := r.db.Dialect == dialect.Postgres
	if pg {
		args = append(args, workspaceID)
	}
	for _, b := range []struct {
		kind int
		keys []uuid.UUID
	}{{kindProject, k.projects}, {kindCategory, k.categories}, {kindMember, k.members}} {
		if len(b.keys) == 0 {
			continue
		}
		if q.Len() > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString(r.selects[b.kind])
		if pg {
			// One uuid[] parameter: the statement's text does not
			// depend on how many ids, so it is prepared once.
			args = append(args, uuidArray(b.keys))
			q.WriteString(` WHERE "` + tenancy.Column + `" = $1 AND "id" = ANY($` + strconv.Itoa(len(args)) + `::uuid[])`)
			continue
		}
		// The workspace as an expression without type affinity, compared
		// as text once each row is found by its id (docs/performance.md,
		// "SQLite: packed columns, comparisons without affinity").
		args = append(args, workspaceID)
		q.WriteString(` WHERE +"` + tenancy.Column + `" = ? AND "id" IN (?`)
		q.WriteString(strings.Repeat(",?", len(b.keys)-1))
		q.WriteString(")")
		for _, id := range b.keys {
			args = append(args, id)
		}
	}
	var rows entsql.Rows
	if err := r.db.Driver().Query(ctx, q.String(), args, &rows); err != nil {
		return named{}, true, err
	}
	defer rows.Close()
	found = named{
		categories: make(map[uuid.UUID]*ent.Category, len(k.categories)),
		members:    make(map[uuid.UUID]*ent.Member, len(k.members)),
		projects:   make(map[uuid.UUID]*ent.Project, len(k.projects)),
	}
	for _, id := range k.categories {
		found.categories[id] = nil
	}
	for _, id := range k.members {
		found.members[id] = nil
	}
	for _, id := range k.projects {
		found.projects[id] = nil
	}
	var (
		kind           int64
		id, workspace  uuid.UUID
		name           string
		text1, text2   sql.NullString
		t1, t2, t3, t4 database.NullTime
	)
	dest := []any{&kind, database.UUID{ID: &id}, database.UUID{ID: &workspace}, &name, &text1, &text2, &t1, &t2, &t3, &t4}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return named{}, true, err
		}
		// As ent's assignValues: a nillable field points to a copy.
		switch kind {
		case kindProject:
			p := &ent.Project{ID: id, WorkspaceID: workspace, Name: name, CreatedAt: t1.Time, UpdatedAt: t2.Time}
			if t3.Valid {
				at := t3.Time
				p.StartedAt = &at
			}
			if t4.Valid {
				at := t4.Time
				p.DueAt = &at
			}
			found.projects[id] = p
		case kindCategory:
			found.categories[id] = &ent.Category{ID: id, WorkspaceID: workspace, Name: name, CreatedAt: t1.Time, UpdatedAt: t2.Time}
		case kindMember:
			m := &ent.Member{ID: id, WorkspaceID: workspace, Name: name, Email: text1.String, Role: member.Role(text2.String), CreatedAt: t1.Time}
			if t2.Valid {
				at := t2.Time
				m.RemovedAt = &at
			}
			found.members[id] = m
		default:
			return named{}, true, fmt.Errorf("loader: row of unknown kind %d", kind)
		}
	}
	return found, true, rows.Err()
}

// uuidArray is keys as a PostgreSQL uuid[] literal: {id,id,…}.
func uuidArray(keys []uuid.UUID) string { return idList(keys, '{', '}', "") }

// uuidJSON is keys as a JSON array of their texts: ["id","id",…].
func uuidJSON(keys []uuid.UUID) string { return idList(keys, '[', ']', `"`) }

// idList is keys between open and close, each between quotes, separated
// by commas.
func idList(keys []uuid.UUID, open, close byte, quote string) string {
	b := make([]byte, 0, 2+(37+2*len(quote))*len(keys))
	b = append(b, open)
	for i, id := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, quote...)
		b = ids.AppendText(b, id)
		b = append(b, quote...)
	}
	return string(append(b, close))
}
