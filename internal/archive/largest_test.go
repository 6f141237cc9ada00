package archive_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/limits"
)

// TestExportPagesAreBoundedInBytes is the biggest legal input: procedures
// whose content is the longest allowed in 4-byte characters (800 KB each),
// each rewritten once (an event holding that content before and after:
// 1.6 MB), and comments of the longest text. A page of 200 such records
// would hold 160 to 320 MB; each page the export reads holds at most
// PageBytes of them (one record at least), and the archive is whole.
func TestExportPagesAreBoundedInBytes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		w := s.NewWorkspace(t, "Huge", "HUG")
		ctx, err := s.Service.ActAsAdmin(context.Background(), w.ID)
		if err != nil {
			t.Fatal(err)
		}
		content := strings.Repeat("𝄞", limits.Content) // 4 bytes each in UTF-8
		comment := strings.Repeat("𝄞", limits.Comment)
		const procedures = 12
		due := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
		for i := range procedures {
			p, err := s.Service.CreateProcedure(ctx, core.CreateProcedureInput{Name: "Huge", Priority: "LOW", State: "TODO",
				DueAt: &due, ProjectID: w.ProjectID, CategoryID: w.CategoryID, DoerID: w.AdminID, Content: content})
			if err != nil {
				t.Fatal(err)
			}
			rewritten := content[:len(content)-4] + "x"
			if _, err := s.Service.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{Content: core.Some(rewritten)}); err != nil {
				t.Fatal(err)
			}
			if i%4 == 0 {
				if _, err := s.Service.AddComment(ctx, p.ID.String(), comment); err != nil {
					t.Fatal(err)
				}
			}
		}
		const pageBytes = 2 << 20
		// A page's records are written before the next page is read: the
		// bytes written between two reads are the page's.
		var archived bytes.Buffer
		sink := &sizeWriter{w: &archived}
		var (
			last struct {
				typ      string
				n, start int
			}
			biggest    int
			largePages int
		)
		closePage := func() {
			if last.typ != archive.TypeProcedure && last.typ != archive.TypeComment && last.typ != archive.TypeEvent {
				return
			}
			largePages++
			held := sink.n - last.start
			biggest = max(biggest, held)
			// What fits in pageBytes, or one record; a record's JSON
			// adds its fields' names and ids to its text.
			if last.n > 1 && held > pageBytes+last.n*1024 {
				t.Errorf("a page of %d %s records wrote %d bytes, over the page's %d", last.n, last.typ, held, pageBytes)
			}
		}
		_, err = archive.Export(ctx, db.Client, sink, archive.ExportOptions{Dialect: db.Dialect, PageBytes: pageBytes,
			PageRead: func(typ string, n int) {
				closePage()
				last.typ, last.n, last.start = typ, n, sink.n
			}})
		if err != nil {
			t.Fatal(err)
		}
		closePage()
		t.Logf("archive of %d bytes; %d pages of procedures, comments or events, the largest %d KB", sink.n, largePages, biggest>>10)
		if sink.n < procedures*len(content) {
			t.Fatalf("the archive holds %d bytes: not the %d procedures' content", sink.n, procedures)
		}
		if biggest < len(content) {
			t.Fatalf("no page held a procedure: the test proves nothing")
		}

		// The import's batches are bounded in bytes too: with batches of
		// 2 MiB, the procedures take an INSERT for each two of them, where
		// a bound of rows alone would have written them in one.
		statements := func(batchBytes int) int64 {
			name := "sqlite"
			if db.Dialect == dialect.Postgres {
				name = "postgres"
			}
			target := dbtest.Open(t, name)
			before := target.Statements()
			if _, err := archive.Import(context.Background(), target.Client, bytes.NewReader(archived.Bytes()),
				archive.ImportOptions{BatchBytes: batchBytes}); err != nil {
				t.Fatal(err)
			}
			return target.Statements() - before
		}
		unbounded, bounded := statements(1<<30), statements(pageBytes)
		t.Logf("import: %d statements with batches of 2 MiB, %d with batches of 1 GiB", bounded, unbounded)
		if bounded < unbounded+procedures/2-1 {
			t.Fatalf("batches of 2 MiB took %d statements, batches of 1 GiB %d: the procedures were not written a few at a time", bounded, unbounded)
		}
	})
}
