package database

import (
	"fmt"

	"github.com/google/uuid"
)

// Hand-written scans of hot reads (a list page's procedures and comments)
// scan each row into holders made once per statement, rather than ent's
// holder per column of every row; these are the holders for uuid columns.
// Like ent's scan of a column into a fresh uuid.UUID, they parse text
// without first copying it into a string, as uuid.UUID's own Scan does.

// UUID scans a uuid column into *ID: to what uuid.UUID's Scan leaves in a
// zero uuid.UUID (nil and empty give the zero uuid, 16 bytes are the uuid,
// anything else its text), with the same errors.
type UUID struct{ ID *uuid.UUID }

// Scan implements sql.Scanner.
func (f UUID) Scan(src any) error {
	var (
		id  uuid.UUID
		err error
	)
	switch s := src.(type) {
	case nil:
	case []byte:
		switch len(s) {
		case 0:
		case 16:
			copy(id[:], s)
		default:
			id, err = uuid.ParseBytes(s)
		}
	case string:
		if s != "" {
			id, err = uuid.Parse(s)
		}
	default:
		return fmt.Errorf("Scan: unable to scan type %T into UUID", src)
	}
	if err != nil {
		return fmt.Errorf("Scan: %v", err)
	}
	*f.ID = id
	return nil
}

// NullUUID scans a nullable uuid column, as ent's sql.NullScanner over a
// fresh uuid.UUID does: Valid is false for NULL.
type NullUUID struct {
	ID    uuid.UUID
	Valid bool
}

// Scan implements sql.Scanner.
func (n *NullUUID) Scan(src any) error {
	n.ID, n.Valid = uuid.Nil, src != nil
	if src == nil {
		return nil
	}
	return UUID{&n.ID}.Scan(src)
}
