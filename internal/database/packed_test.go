package database_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestPackedColumnsRoundTrip: what PackSQLite packs on a real SQLite,
// Unpack splits back into the texts the columns hold, a NULL of a nullable
// column as ”; a text of another number of fields is an error, not a
// shifted read.
func TestPackedColumnsRoundTrip(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE packed (id uuid, parent uuid, at DATETIME, n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 7, 30, 0, 123456789, time.FixedZone("", 5*3600+1800))
	const id = "01a24a42-c4d1-7210-8ee0-e0c687722601"
	for _, parent := range []any{"01a24a43-8461-7757-bcdb-d83d941ad801", nil} {
		if _, err := db.SQL.ExecContext(ctx, "DELETE FROM packed"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SQL.ExecContext(ctx, "INSERT INTO packed VALUES (?, ?, ?, ?)", id, parent, at, 1<<40); err != nil {
			t.Fatal(err)
		}
		expr := database.PackSQLite([]string{`"id"`, `"parent"`, `"at"`, `"n"`}, []bool{false, true, false, false})
		var packed string
		if err := db.SQL.QueryRowContext(ctx, "SELECT "+expr+" FROM packed").Scan(&packed); err != nil {
			t.Fatal(err)
		}
		fields := make([]string, 4)
		if err := database.Unpack(packed, fields); err != nil {
			t.Fatalf("%q: %v", packed, err)
		}
		wantParent, _ := parent.(string)
		if fields[0] != id || fields[1] != wantParent || fields[3] != "1099511627776" {
			t.Errorf("unpacked %q from %q", fields, packed)
		}
		got, err := database.TimeText(fields[2])
		if err != nil || !got.Equal(at) {
			t.Errorf("time %q read as %v, %v; want %v", fields[2], got, err, at)
		}
	}
	for _, bad := range []string{"a|b", "a|b|c|d", "", "a|b|c|"} {
		if err := database.Unpack(bad, make([]string, 3)); err == nil {
			t.Errorf("%q unpacked into 3 fields; want an error", bad)
		}
	}
	if err := database.Unpack("a||c", make([]string, 3)); err != nil {
		t.Errorf("an empty field: %v", err)
	}
	if _, err := database.TimeText("yesterday"); err == nil || !strings.Contains(err.Error(), "yesterday") {
		t.Errorf("TimeText(yesterday): %v; want an error naming it", err)
	}
}
