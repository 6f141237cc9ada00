package database_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, on a machine without a zone database

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestTimeReadsAsTheDriver: database.Time makes of a DATETIME column's
// text, selected as an expression, the time modernc.org/sqlite makes of
// the column itself (the same instant, zone name and offset), for what
// procsvc writes and every other layout the driver reads; text the driver
// leaves unparsed is an error.
//
// Both name a time's zone after time.Local when its offset is Local's at
// that instant, so the test runs in the machine's zone and again, in a
// child process of its own (time.Local is read once per process), in zones
// whose offsets are not whole hours, change with daylight saving or lie
// west of Greenwich: in UTC alone, Local's branch equals UTC's.
func TestTimeReadsAsTheDriver(t *testing.T) {
	timeReadsAsTheDriver(t)
	if os.Getenv(tzChild) != "" {
		return
	}
	for _, zone := range []string{"UTC", "America/St_Johns", "Asia/Kathmandu", "Europe/Berlin", "Pacific/Chatham"} {
		t.Run(zone, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestTimeReadsAsTheDriver$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "TZ="+zone, tzChild+"=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("in TZ=%s: %v\n%s", zone, err, out)
			}
		})
	}
}

// tzChild is set in the environment of TestTimeReadsAsTheDriver's child
// processes.
const tzChild = "PROCSVC_TEST_TZ_CHILD"

func timeReadsAsTheDriver(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE times (id INTEGER PRIMARY KEY, at DATETIME)"); err != nil {
		t.Fatal(err)
	}
	written := []time.Time{
		time.Date(2026, 12, 4, 21, 30, 0, 123456789, time.UTC),
		time.Date(2026, 12, 4, 21, 30, 0, 0, time.UTC),
		time.Date(1999, 1, 2, 3, 4, 5, 600, time.FixedZone("", -7*3600)),
		time.Date(2026, 7, 1, 12, 0, 0, 1, time.FixedZone("CEST", 2*3600)),
		time.Date(2026, 7, 1, 12, 0, 0, 1, time.Local),
	}
	random := rand.New(rand.NewPCG(35, 1))
	for range 300 {
		zone := []*time.Location{time.UTC, time.Local, time.FixedZone("", -int(random.IntN(14*60))*60), time.FixedZone("X", int(random.IntN(14*4))*900)}[random.IntN(4)]
		at := time.Unix(random.Int64N(4_000_000_000)-1_000_000_000, 0).In(zone)
		if random.IntN(3) > 0 {
			at = at.Add(time.Duration(random.IntN(1e9)))
		}
		written = append(written, at)
	}
	for _, w := range written { // through the driver, as procsvc writes
		if _, err := db.SQL.ExecContext(ctx, "INSERT INTO times (at) VALUES (?)", w); err != nil {
			t.Fatal(err)
		}
	}
	for _, text := range []string{
		"2026-12-04 21:30:00.5+01:00", "2026-12-04 21:30:00+00:00Z", "2026-12-04T21:30:00.25-03:30",
		"2026-12-04 21:30:00.987654321", "2026-12-04T21:30:00", "2026-12-04 21:30", "2026-12-04T21:30", "2026-12-04",
		"2026-12-04 21:30:00.5 +0100 CET", "2026-12-04 21:30:00.5 +0000 UTC m=+0.000012345", "2026-12-04Z",
		"2026-12-04 21:30:00.1234567891+00:00", "2026-12-04 21:30:00+14:60", "2024-02-29 00:00:00+00:00",
		// No time, to the driver: left as text.
		"2026-02-29 00:00:00+00:00", "2026-12-04 24:00:00+00:00", "2026-12-04 21:30:60+00:00", "2026-12-04 21:30:00.+00:00",
		"2026-13-04 21:30:00+00:00", "2026-12-04 21:30:00+25:00", "yesterday",
	} {
		if _, err := db.SQL.ExecContext(ctx, "INSERT INTO times (at) VALUES (CAST(? AS TEXT))", text); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.SQL.QueryContext(ctx, "SELECT at, +at FROM times ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			driver any
			got    time.Time
		)
		var scanned any
		if err := rows.Scan(&driver, &scanned); err != nil {
			t.Fatal(err)
		}
		err := database.Time{T: &got}.Scan(scanned)
		want, ok := driver.(time.Time)
		if !ok {
			if err == nil {
				t.Errorf("row %d: the driver left %q as text; database.Time read %v", n, driver, got)
			}
			n++
			continue
		}
		if err != nil {
			t.Fatalf("row %d (%v): %v", n, driver, err)
		}
		gotName, gotOffset := got.Zone()
		wantName, wantOffset := want.Zone()
		if !got.Equal(want) || gotName != wantName || gotOffset != wantOffset || got.Location().String() != want.Location().String() {
			t.Errorf("row %d: database.Time read %v (%s %d, %s); the driver %v (%s %d, %s)",
				n, got, gotName, gotOffset, got.Location(), want, wantName, wantOffset, want.Location())
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(written)+21 {
		t.Fatalf("%d rows", n)
	}
	for _, bad := range []any{"yesterday", int64(1764883800), nil, []byte("2026-12-04")} {
		var got time.Time
		if err := (database.Time{T: &got}).Scan(bad); err == nil {
			t.Errorf("%#v scanned as %v; want an error", bad, got)
		}
	}
	// NullTime: NULL is not valid (and clears a time scanned before);
	// anything else is read as Time reads it.
	nt := database.NullTime{Time: time.Now(), Valid: true}
	if err := nt.Scan(nil); err != nil || nt.Valid || !nt.Time.IsZero() {
		t.Errorf("NULL scanned as %+v, %v; want not valid, zero", nt, err)
	}
	at := time.Date(2026, 12, 4, 21, 30, 0, 500_000_000, time.FixedZone("", 3600))
	if err := nt.Scan("2026-12-04 21:30:00.5+01:00"); err != nil || !nt.Valid || !nt.Time.Equal(at) {
		t.Errorf("a time scanned as %+v, %v; want %v", nt, err, at)
	}
	if err := nt.Scan("yesterday"); err == nil {
		t.Errorf("text no layout reads scanned as %+v; want an error", nt)
	}
}
