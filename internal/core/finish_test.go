package core_test

// The finish of a write (internal/core/finish.go): the change-log row a
// write appends is the same whichever way its transaction finished — the
// ent statements after an exclusive lock, on either database, or the one
// statement that ends a shared field update on PostgreSQL.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/ids"
)

// TestEveryPathLogsTheSameEntry writes one field update through every way
// a write can finish on each database (exclusive on SQLite and on
// PostgreSQL, shared on PostgreSQL) and compares the change-log rows they
// appended, column by column: every field of ent.Event, so a column added
// to the table is compared here without a change to this test, and fails
// it until entryRow (finish.go) writes it, on every path of both
// databases alike. Values that differ by nature (the row's id, its version
// and time) are checked against what they must be; every other column must
// be set, the same on every path, and the same on SQLite as on PostgreSQL.
func TestEveryPathLogsTheSameEntry(t *testing.T) {
	byDialect := map[string]map[string]string{}
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := newLogFixture(t, db, "SAME")
		clockOpt := core.WithClock(func() time.Time { return clock })
		hub := events.NewHub(events.HubOptions{})
		t.Cleanup(hub.Close)
		paths := map[string]*core.Service{}
		if db.Dialect == "postgres" {
			paths["exclusive"] = core.New(db.Client, clockOpt, core.WithAnnouncer(events.NewPostgresAnnouncer(hub)))
			paths["shared"] = core.New(db.Client, clockOpt, core.WithAnnouncer(events.NewPostgresAnnouncer(hub)),
				core.WithLockPolicy(core.SharedFieldUpdates))
		} else {
			paths["exclusive"] = core.New(db.Client, clockOpt, core.WithAnnouncer(events.NewLocalAnnouncer(hub)))
		}
		in := f.input("Rotate keys", "TODO", f.project)
		in.Content = "step one"
		p, err := f.svc.CreateProcedure(f.withKey, in)
		if err != nil {
			t.Fatal(err)
		}
		names := map[uuid.UUID]string{
			f.boot.Workspace.ID: "the workspace", p.ID: "the procedure", f.project.ID: "the project",
			f.boot.Admin.ID: "the admin", f.token.ID: "the token", f.category.ID: "the category",
		}
		reset := newService(db)
		var first map[string]string
		var firstPath string
		for _, path := range sortedKeys(paths) {
			before := f.version(t)
			start := time.Now().UTC().Truncate(time.Microsecond)
			if _, err := paths[path].UpdateProcedure(f.withKey, p.ShortID, core.UpdateProcedureInput{
				Name: core.Some("Rotate all keys"), Priority: core.Some("HIGH"), Content: core.Some("step two")}); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			end := time.Now().UTC()
			version := f.version(t)
			logged := f.loggedEvents(t, before)
			if len(logged) != 1 || version != before+1 {
				t.Fatalf("%s: %d entries, version %d → %d; want 1 entry and one bump", path, len(logged), before, version)
			}
			row := entryColumns(t, logged[0], names, version, start, end)
			t.Logf("%s %s: %v", db.Dialect, path, row)
			if first == nil {
				first, firstPath = row, path
			} else if !reflect.DeepEqual(row, first) {
				t.Errorf("%s logged %v; %s logged %v", path, row, firstPath, first)
			}
			if _, err := reset.UpdateProcedure(f.admin, p.ShortID, core.UpdateProcedureInput{
				Name: core.Some("Rotate keys"), Priority: core.Some("MEDIUM"), Content: core.Some("step one")}); err != nil {
				t.Fatal(err)
			}
		}
		byDialect[db.Dialect] = first
	})
	if sqlite, pg := byDialect["sqlite"], byDialect["postgres"]; sqlite != nil && pg != nil && !reflect.DeepEqual(sqlite, pg) {
		t.Errorf("SQLite logged %v; PostgreSQL logged %v", sqlite, pg)
	}
}

// entryColumns is e's every column (each exported field of ent.Event) as
// a comparable text: ids by the names given, JSON in canonical form, and
// the id, version and time by whether they are what they must be. It fails
// t on a column left unset: the write compared sets every one.
func entryColumns(t *testing.T, e *ent.Event, names map[uuid.UUID]string, version int64, start, end time.Time) map[string]string {
	t.Helper()
	name := func(id uuid.UUID) string {
		if n, ok := names[id]; ok {
			return n
		}
		return fmt.Sprintf("an id of kind %d", ids.KindOf(id))
	}
	out := map[string]string{}
	v := reflect.ValueOf(*e)
	for i := 0; i < v.NumField(); i++ {
		field := v.Type().Field(i)
		if !field.IsExported() || field.Name == "Edges" {
			continue
		}
		value := v.Field(i)
		if value.Kind() == reflect.Pointer {
			if value.IsNil() {
				t.Errorf("column %s left NULL", field.Name)
				continue
			}
			value = value.Elem()
		}
		var text string
		switch x := value.Interface().(type) {
		case uuid.UUID:
			text = name(x)
		case time.Time:
			text = fmt.Sprintf("within the write: %t", !x.Before(start) && !x.After(end) && x.Equal(x.Truncate(time.Microsecond)))
		case string:
			text = canonicalJSON(x, names)
		default:
			text = fmt.Sprint(x)
		}
		switch field.Name {
		case "ID":
			text = fmt.Sprintf("an event id: %t", ids.KindOf(e.ID) == ids.KindEvent)
		case "Version":
			text = fmt.Sprintf("the bumped version: %t", e.Version == version)
		}
		if value.IsZero() {
			t.Errorf("column %s left unset", field.Name)
		}
		out[field.Name] = text
	}
	return out
}

// canonicalJSON is s with sorted keys if it is JSON (PostgreSQL's jsonb
// reorders them), with the ids of names replaced by their names.
func canonicalJSON(s string, names map[uuid.UUID]string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			s = string(b)
		}
	}
	for id, n := range names {
		s = strings.ReplaceAll(s, id.String(), n)
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
