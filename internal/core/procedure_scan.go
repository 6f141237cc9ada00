package core

// The scan of the procedures a hand-written read selects (nestedRows):
// into one set of holders for every row, each row then copied out, where
// ent's scan allocates a holder for every column of every row; and on
// SQLite its times handed over as the stored text (a +"column"
// expression), parsed by database.Time, where modernc.org/sqlite parses a
// DATETIME column itself by trying time.Time's String layout first, a
// failed parse and an allocation for every value procsvc writes
// (docs/performance.md, "Nested connections").

import (
	stdsql "database/sql"
	"fmt"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/database"
)

// procedureScanner scans rows of the columns it was made for into scratch;
// procedure copies each out.
type procedureScanner struct {
	scratch          ent.Procedure
	content, capture stdsql.NullString
	category, doer   database.NullUUID
	// The nullable columns read, whose holders are copied out.
	hasContent, hasCapture, hasCategory, hasDoer bool
	// packed holds the packed column's text (SQLite), whose fields
	// unpacked are set by their setters (procedureColumns).
	packed  string
	fields  []string
	setters []func(p *ent.Procedure, s string, sc *procedureScanner) error
	dest    []any
	// spare are procedures allocated for the next rows, a few at a time;
	// ids the same for the ids a procedure points to.
	spare []ent.Procedure
	ids   []uuid.UUID
}

// procedureChunk is how many procedures a scanner allocates at once: one
// allocation for a dashboard's parent of ten or so rather than one a row,
// and little to spare for a short read.
const procedureChunk = 16

// procedureColumns are the columns a hand-written read selects, in its
// order: on SQLite first the packed ones, as one text (database.PackSQLite),
// then each plain one; on PostgreSQL every one plain.
type procedureColumns struct {
	packed, plain []string
}

// selectProcedureColumns makes sel, reading t, select columns (nil: every
// column) but unread, for a procedureScanner, and returns them: on SQLite
// those of fixed form packed (procedureSetters); every other time as an
// expression, so that the driver hands its text over unparsed.
func selectProcedureColumns(sel *sql.Selector, t *sql.SelectTable, d string, columns []string, unread string) procedureColumns {
	if columns == nil {
		columns = procedure.Columns
	}
	var (
		read     procedureColumns
		exprs    []string
		packed   []string
		nullable []bool
	)
	for _, c := range columns {
		if c == unread {
			continue
		}
		if _, ok := procedureSetters[c]; ok && d == dialect.SQLite {
			read.packed = append(read.packed, c)
			packed = append(packed, t.C(c))
			nullable = append(nullable, c == procedure.FieldCategoryID || c == procedure.FieldDoerID)
			continue
		}
		e := t.C(c)
		if d == dialect.SQLite && isProcedureTime(c) {
			e = "+" + e // handed over unparsed, to database.Time
		}
		read.plain, exprs = append(read.plain, c), append(exprs, e)
	}
	if len(packed) > 0 {
		exprs = append([]string{database.PackSQLite(packed, nullable)}, exprs...)
	}
	sel.Select(exprs...)
	return read
}

func isProcedureTime(column string) bool {
	switch column {
	case procedure.FieldCreatedAt, procedure.FieldUpdatedAt, procedure.FieldDueAt:
		return true
	}
	return false
}

// procedureSetters set a procedure's field of each column of fixed form
// from its text in a packed column: UUIDs (” for a NULL category or
// doer), times, the enums (as their constants, so that a procedure keeps
// no part of the packed text) and the integers.
var procedureSetters = map[string]func(p *ent.Procedure, s string, sc *procedureScanner) error{
	procedure.FieldID: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) { p.ID, err = uuid.Parse(s); return },
	procedure.FieldWorkspaceID: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.WorkspaceID, err = uuid.Parse(s)
		return
	},
	procedure.FieldCreatorID: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.CreatorID, err = uuid.Parse(s)
		return
	},
	procedure.FieldProjectID: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.ProjectID, err = uuid.Parse(s)
		return
	},
	procedure.FieldCategoryID: func(p *ent.Procedure, s string, sc *procedureScanner) (err error) {
		p.CategoryID, err = sc.id(s)
		return
	},
	procedure.FieldDoerID: func(p *ent.Procedure, s string, sc *procedureScanner) (err error) { p.DoerID, err = sc.id(s); return },
	procedure.FieldCreatedAt: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.CreatedAt, err = database.TimeText(s)
		return
	},
	procedure.FieldUpdatedAt: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.UpdatedAt, err = database.TimeText(s)
		return
	},
	procedure.FieldDueAt: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.DueAt, err = database.TimeText(s)
		return
	},
	procedure.FieldPriority: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.Priority, err = enumValue(s, priorities)
		return
	},
	procedure.FieldState: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.State, err = enumValue(s, states)
		return
	},
	procedure.FieldNumber: func(p *ent.Procedure, s string, _ *procedureScanner) (err error) {
		p.Number, err = strconv.ParseInt(s, 10, 64)
		return
	},
	procedure.FieldCommentCount: func(p *ent.Procedure, s string, _ *procedureScanner) error {
		n, err := strconv.ParseInt(s, 10, 0)
		p.CommentCount = int(n)
		return err
	},
}

var (
	priorities = procedure.PriorityValues()
	states     = procedure.StateValues()
)

// enumValue is the one of values that s spells; a value outside them (a
// row written outside procsvc) as it is stored, as ent reads it, copied
// out of the packed text.
func enumValue[E ~string](s string, values []E) (E, error) {
	for _, v := range values {
		if string(v) == s {
			return v, nil
		}
	}
	return E(strings.Clone(s)), nil
}

// id is a pointer to the id s spells, nil for ” (NULL): the ids are
// allocated a few at a time, as the procedures are.
func (sc *procedureScanner) id(s string) (*uuid.UUID, error) {
	if s == "" {
		return nil, nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return nil, err
	}
	if len(sc.ids) == 0 {
		sc.ids = make([]uuid.UUID, 2*procedureChunk)
	}
	p := &sc.ids[0]
	sc.ids = sc.ids[1:]
	*p = id
	return p, nil
}

// newProcedureScanner scans columns, each one of procedure.Columns; an
// error names a column it has no holder for (one added to the schema and
// not here, which TestNestedProceduresAsEntReadsThem reads).
func newProcedureScanner(columns procedureColumns) (*procedureScanner, error) {
	sc := &procedureScanner{}
	if len(columns.packed) > 0 {
		sc.dest = append(sc.dest, &sc.packed)
		sc.fields = make([]string, len(columns.packed))
		for _, c := range columns.packed {
			set, ok := procedureSetters[c]
			if !ok {
				return nil, fmt.Errorf("core: no packed scan of the procedures' column %q", c)
			}
			sc.setters = append(sc.setters, set)
		}
	}
	p := &sc.scratch
	for _, c := range columns.plain {
		var d any
		switch c {
		case procedure.FieldID:
			d = database.UUID{ID: &p.ID}
		case procedure.FieldWorkspaceID:
			d = database.UUID{ID: &p.WorkspaceID}
		case procedure.FieldCreatorID:
			d = database.UUID{ID: &p.CreatorID}
		case procedure.FieldProjectID:
			d = database.UUID{ID: &p.ProjectID}
		case procedure.FieldCategoryID:
			d, sc.hasCategory = &sc.category, true
		case procedure.FieldDoerID:
			d, sc.hasDoer = &sc.doer, true
		case procedure.FieldCreatedAt:
			d = database.Time{T: &p.CreatedAt}
		case procedure.FieldUpdatedAt:
			d = database.Time{T: &p.UpdatedAt}
		case procedure.FieldDueAt:
			d = database.Time{T: &p.DueAt}
		case procedure.FieldNumber:
			d = &p.Number
		case procedure.FieldShortID:
			d = &p.ShortID
		case procedure.FieldName:
			d = &p.Name
		case procedure.FieldPriority:
			d = (*string)(&p.Priority)
		case procedure.FieldState:
			d = (*string)(&p.State)
		case procedure.FieldContent:
			d, sc.hasContent = &sc.content, true
		case procedure.FieldProjectName:
			d = &p.ProjectName
		case procedure.FieldPosition:
			d = &p.Position
		case procedure.FieldCaptureID:
			d, sc.hasCapture = &sc.capture, true
		case procedure.FieldDisplayVideo:
			d = &p.DisplayVideo
		case procedure.FieldIsFineTunedData:
			d = &p.IsFineTunedData
		case procedure.FieldCommentCount:
			d = &p.CommentCount
		default:
			return nil, fmt.Errorf("core: no scan of the procedures' column %q", c)
		}
		sc.dest = append(sc.dest, d)
	}
	return sc, nil
}

// procedure is a copy of the row scanned last, as ent's scan of the same
// columns makes it (the unread fields their zero values). A packed column
// not as it was written is an error.
func (sc *procedureScanner) procedure() (*ent.Procedure, error) {
	if len(sc.spare) == 0 {
		sc.spare = make([]ent.Procedure, procedureChunk)
	}
	p := &sc.spare[0]
	sc.spare = sc.spare[1:]
	*p = sc.scratch
	if sc.hasContent && sc.content.Valid {
		s := sc.content.String
		p.Content = &s
	}
	if sc.hasCapture && sc.capture.Valid {
		s := sc.capture.String
		p.CaptureID = &s
	}
	if sc.hasCategory && sc.category.Valid {
		id := sc.category.ID
		p.CategoryID = &id
	}
	if sc.hasDoer && sc.doer.Valid {
		id := sc.doer.ID
		p.DoerID = &id
	}
	if len(sc.setters) > 0 {
		if err := database.Unpack(sc.packed, sc.fields); err != nil {
			return nil, err
		}
		for i, set := range sc.setters {
			if err := set(p, sc.fields[i], sc); err != nil {
				return nil, fmt.Errorf("core: packed column %d of a procedure: %w", i, err)
			}
		}
	}
	return p, nil
}
