package core

// The row an UPDATE leaves, known without reading it back: ent's generated
// Applied (ent/template/applied.tmpl) of the row the write read, when every
// value the UPDATE sent is stored as sent.

import (
	"math"
	"time"

	"github.com/procsvc/procsvc/ent"
)

// sentExactly reports whether m sends only values both databases store as
// sent (exactValue), so that Applied of the row m updates is the stored
// row.
func sentExactly(m ent.Mutation) bool {
	for _, f := range m.Fields() {
		if v, _ := m.Field(f); !exactValue(v) {
			return false
		}
	}
	return true
}

// exactValue reports whether both databases store v as sent and read it
// back equal: a time to the microsecond (PostgreSQL rounds finer ones), a
// float other than -0 (SQLite reads it back as 0). Strings are stored as
// sent (validation refuses what PostgreSQL would not store), and so are
// ids, enums and booleans.
func exactValue(v ent.Value) bool {
	switch x := v.(type) {
	case time.Time:
		return x.Equal(x.Truncate(time.Microsecond))
	case float64:
		return x != 0 || !math.Signbit(x)
	}
	return true
}
