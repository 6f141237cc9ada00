// Package transfer moves a procsvc database to another, SQLite to
// PostgreSQL and back (procsvc copy, docs/operations.md "Moving between
// databases (copy)"), and verifies that two databases hold the same rows.
//
// It knows no table by name: the tables, their columns, keys and the order
// their foreign keys impose are read from ent's migrate schema
// (ent/migrate.Tables), so that a table added to the schema is copied and
// verified with no change here.
package transfer

import (
	"fmt"
	"slices"

	entschema "entgo.io/ent/dialect/sql/schema"
	"entgo.io/ent/schema/field"

	"github.com/procsvc/procsvc/ent/migrate"
)

// kind is how a column's values are read, written and encoded for the
// digest: the same on both dialects whatever each stores (a SQLite bool is
// an integer, a PostgreSQL uuid is not text).
type kind int

const (
	kindString kind = iota
	kindUUID
	kindTime
	kindBool
	kindInt
	kindFloat
	kindBytes
	kindJSON
)

type column struct {
	name string
	kind kind
}

// table is one table of the schema as the copy sees it.
type table struct {
	name    string
	columns []column
	// key is the index of the primary key's column: rows are read, written
	// and compared in its order.
	key int
	// workspace is the index of the column naming the row's workspace (the
	// key itself for the workspaces table), -1 when the table has none:
	// its rows are then verified as one group.
	workspace int
	// sequence: the key is an integer the database draws from a sequence
	// (PostgreSQL's identity), which must be moved past the copied keys.
	sequence bool
	// parents are the tables its foreign keys reference (itself excluded).
	parents []string
}

// workspaceColumn names the column of a row's workspace in every tenant
// table (internal/tenancy).
const workspaceColumn = "workspace_id"

// workspacesTable is the table whose key is the workspace.
const workspacesTable = "workspaces"

// schemaTables is the schema in the order the copy writes it (parents
// first), read once at start: ent's migration planner rewrites
// migrate.Tables' descriptions while it runs (internal/database,
// entSchemaMu), so they are read before any migration can run.
var schemaTables, schemaErr = plan(migrate.Tables)

// plan turns ent's table descriptions into tables in dependency order:
// a table comes after every table its foreign keys reference, ties by
// name, so that the order is the same on every run.
func plan(in []*entschema.Table) ([]*table, error) {
	byName := map[string]*table{}
	for _, st := range in {
		if len(st.PrimaryKey) != 1 {
			return nil, fmt.Errorf("transfer: table %s: a primary key of %d columns (one is needed to page by it)", st.Name, len(st.PrimaryKey))
		}
		t := &table{name: st.Name, key: -1, workspace: -1}
		for i, c := range st.Columns {
			k, err := kindOf(c)
			if err != nil {
				return nil, fmt.Errorf("transfer: table %s: %w", st.Name, err)
			}
			t.columns = append(t.columns, column{name: c.Name, kind: k})
			if c.Name == st.PrimaryKey[0].Name {
				t.key = i
				t.sequence = c.Increment && k == kindInt
			}
			if c.Name == workspaceColumn {
				t.workspace = i
			}
		}
		if t.key < 0 {
			return nil, fmt.Errorf("transfer: table %s: primary key %s is not among its columns", st.Name, st.PrimaryKey[0].Name)
		}
		if k := t.columns[t.key].kind; k != kindUUID && k != kindInt {
			return nil, fmt.Errorf("transfer: table %s: a primary key of a kind the copy cannot page by (uuid or integer)", st.Name)
		}
		if st.Name == workspacesTable && t.workspace < 0 {
			t.workspace = t.key
		}
		for _, fk := range st.ForeignKeys {
			if fk.RefTable != nil && fk.RefTable.Name != st.Name && !slices.Contains(t.parents, fk.RefTable.Name) {
				t.parents = append(t.parents, fk.RefTable.Name)
			}
		}
		byName[st.Name] = t
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []*table
	placed := map[string]bool{}
	for len(out) < len(names) {
		progress := false
		for _, n := range names {
			t := byName[n]
			waiting := slices.ContainsFunc(t.parents, func(p string) bool { return byName[p] != nil && !placed[p] })
			if placed[n] || waiting {
				continue
			}
			placed[n] = true
			out = append(out, t)
			progress = true
			break
		}
		if !progress {
			return nil, fmt.Errorf("transfer: the foreign keys of the schema form a cycle; no order writes every parent first")
		}
	}
	return out, nil
}

// kindOf is the kind of a column from its ent type. A string column stored
// as jsonb on PostgreSQL is JSON: jsonb keeps its own spelling of the text
// (key order, spaces), so it is compared canonicalised.
func kindOf(c *entschema.Column) (kind, error) {
	switch c.Type {
	case field.TypeUUID:
		return kindUUID, nil
	case field.TypeTime:
		return kindTime, nil
	case field.TypeBool:
		return kindBool, nil
	case field.TypeInt, field.TypeInt8, field.TypeInt16, field.TypeInt32, field.TypeInt64,
		field.TypeUint, field.TypeUint8, field.TypeUint16, field.TypeUint32, field.TypeUint64:
		return kindInt, nil
	case field.TypeFloat32, field.TypeFloat64:
		return kindFloat, nil
	case field.TypeBytes:
		return kindBytes, nil
	case field.TypeJSON:
		return kindJSON, nil
	case field.TypeString, field.TypeEnum:
		if st := c.SchemaType["postgres"]; st == "jsonb" || st == "json" {
			return kindJSON, nil
		}
		return kindString, nil
	}
	return 0, fmt.Errorf("column %s: type %s has no encoding in the copy", c.Name, c.Type)
}
