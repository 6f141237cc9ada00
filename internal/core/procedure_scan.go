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

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"

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
	dest                                         []any
	// spare are procedures allocated for the next rows, a few at a time.
	spare []ent.Procedure
}

// procedureChunk is how many procedures a scanner allocates at once: one
// allocation for a dashboard's parent of ten or so rather than one a row,
// and little to spare for a short read.
const procedureChunk = 16

// selectProcedureColumns makes sel, reading t, select columns (nil: every
// column) but unread, for a procedureScanner, in the order it returns
// them: on SQLite each time as an expression, so that the driver hands its
// text over unparsed.
func selectProcedureColumns(sel *sql.Selector, t *sql.SelectTable, d string, columns []string, unread string) []string {
	if columns == nil {
		columns = procedure.Columns
	}
	read := make([]string, 0, len(columns))
	exprs := make([]string, 0, len(columns))
	for _, c := range columns {
		if c == unread {
			continue
		}
		e := t.C(c)
		if d == dialect.SQLite && isProcedureTime(c) {
			e = "+" + e // handed over unparsed, to database.Time
		}
		read, exprs = append(read, c), append(exprs, e)
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

// newProcedureScanner scans columns, each one of procedure.Columns; an
// error names a column it has no holder for (one added to the schema and
// not here, which TestNestedProceduresAsEntReadsThem reads).
func newProcedureScanner(columns []string) (*procedureScanner, error) {
	sc := &procedureScanner{dest: make([]any, len(columns))}
	p := &sc.scratch
	for i, c := range columns {
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
		sc.dest[i] = d
	}
	return sc, nil
}

// procedure is a copy of the row scanned last, as ent's scan of the same
// columns makes it (the unread fields their zero values).
func (sc *procedureScanner) procedure() *ent.Procedure {
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
	return p
}
