package database_test

import (
	"strings"
	"testing"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/database"
)

// The holders scan what ent's scan of a uuid column scans (into a fresh
// uuid.UUID, or a NullScanner over one), to the same value, and fail where
// it fails, whatever they held before.
func TestUUIDHoldersScanAsEntDoes(t *testing.T) {
	id := uuid.MustParse("01a21586-2b74-77af-852e-1d0663b86107")
	stale := uuid.MustParse("00000000-0000-0000-0000-0000000000ff")
	for _, src := range []any{nil, "", []byte{}, id.String(), []byte(id.String()), id[:], "{" + id.String() + "}",
		"urn:uuid:" + id.String(), []byte(strings.ReplaceAll(id.String(), "-", "")), "not a uuid", []byte("xx"), 42} {
		var want uuid.UUID
		werr := want.Scan(src)
		got := stale
		gerr := database.UUID{ID: &got}.Scan(src)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) || (werr == nil && got != want) {
			t.Errorf("UUID.Scan(%#v) = %v, %v; ent: %v, %v", src, got, gerr, want, werr)
		}

		ns := entsql.NullScanner{S: new(uuid.UUID)}
		werr = ns.Scan(src)
		n := database.NullUUID{ID: stale, Valid: src == nil}
		gerr = n.Scan(src)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) ||
			(werr == nil && (n.Valid != ns.Valid || (n.Valid && n.ID != *ns.S.(*uuid.UUID)))) {
			t.Errorf("NullUUID.Scan(%#v) = %+v, %v; ent: %v %v, %v", src, n, gerr, ns.Valid, ns.S, werr)
		}
	}
}
