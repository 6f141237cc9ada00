package archive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
)

// replaceIn returns ls with line i's first match of re replaced by repl.
func replaceIn(ls [][]byte, i int, re, repl string) [][]byte {
	out := make([][]byte, len(ls))
	copy(out, ls)
	out[i] = []byte(strings.Replace(string(ls[i]), regexp.MustCompile(re).FindString(string(ls[i])), repl, 1))
	return out
}

// lineOf returns the index of the last line of type typ.
func lineOf(t *testing.T, ls [][]byte, typ string) int {
	t.Helper()
	for i := len(ls) - 1; i >= 0; i-- {
		if bytes.Contains(ls[i], []byte(`{"type":"`+typ+`"`)) {
			return i
		}
	}
	t.Fatalf("no %s line", typ)
	return -1
}

// TestImportRefusesABadArchiveAndWritesNothing: each hostile archive is
// refused with one line naming what is wrong, and the database is left as
// it was (no row of the workspace in any table, the workspace already
// there untouched).
func TestImportRefusesABadArchiveAndWritesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		src := apitest.Start(t, db)
		w := src.NewWorkspace(t, "Acme", "ACME")
		seed(t, src, w, 4)
		good := export(t, src, w.AdminToken)
		ls := lines(good)
		// The target holds another workspace, which must stay as it is.
		dst := apitest.Start(t, dbtest.Open(t, dialectOf(db)))
		kept := seed(t, dst, dst.NewWorkspace(t, "Kept", "KEPT"), 2)
		keptRows := tenantRows(t, dst.DB, kept.ID)

		huge := append([]byte(`{"type":"comment","text":"`), bytes.Repeat([]byte("a"), archive.MaxLineBytes)...)
		huge = append(huge, `"}`...)
		proc, comment, event := lineOf(t, ls, "procedure"), lineOf(t, ls, "comment"), lineOf(t, ls, "event")
		for _, tc := range []struct {
			name    string
			archive []byte
			target  *apitest.Server
			want    string
		}{
			{"empty", nil, dst, "the archive is empty"},
			{"not JSON Lines", []byte("PK\x03\x04 a zip file\n"), dst, "line 1: not an archive header"},
			{"another format", join(replaceIn(ls, 0, `"format":"[^"]*"`, `"format":"other.thing"`)), dst, `format "other.thing" is not "procsvc.workspace"`},
			{"a later version", join(replaceIn(ls, 0, `"version":1`, `"version":2`)), dst, "line 1: archive version 2: this procsvc reads version 1 only"},
			{"another workspace's header", join(replaceIn(ls, 0, `"workspaceId":"[^"]*"`, `"workspaceId":"`+ids.New(ids.KindWorkspace).String()+`"`)), dst, "line 1: the header names workspace"},
			{"a header of another version", join(replaceIn(ls, 0, `"workspaceVersion":[0-9]+`, `"workspaceVersion":1`)), dst, "line 1: the header's workspaceVersion 1 is not the workspace record's version"},
			{"cut before its trailer", join(ls[:len(ls)-1]), dst, "without its trailer: it was cut short"},
			{"cut mid-line", good[:bytes.LastIndex(good, []byte(`{"type":"event"`))+20], dst, "ends in the middle of line"},
			{"a line dropped", join(append(append([][]byte{}, ls[:comment]...), ls[comment+1:]...)), dst, "the trailer counts 5 comment records, the archive holds 4: it was cut or edited"},
			{"a line over the bound", join(append(append(append([][]byte{}, ls[:3]...), huge), ls[3:]...)), dst, "line 4: line too long: longer than 4194304 bytes"},
			{"a reference to a missing project", join(replaceIn(ls, proc, `"projectId":"[^"]*"`, `"projectId":"`+ids.New(ids.KindProject).String()+`"`)), dst, "names no project of the archive"},
			{"a reference to a missing procedure", join(replaceIn(ls, comment, `"procedureId":"[^"]*"`, `"procedureId":"`+ids.New(ids.KindProcedure).String()+`"`)), dst, "procedureId"},
			{"an id of the wrong kind", join(replaceIn(ls, proc, `"id":"[^"]*"`, `"id":"`+ids.New(ids.KindComment).String()+`"`)), dst, "is not an id of this record's kind"},
			{"an unknown field", join(replaceIn(ls, proc, `"type":"procedure",`, `"type":"procedure","secret":"x",`)), dst, `unknown field "secret"`},
			{"an unknown type", join(replaceIn(ls, proc, `"type":"procedure"`, `"type":"token"`)), dst, `unknown record type "token"`},
			{"out of order", join(append(append(append([][]byte{}, ls[:event+1]...), ls[2]), ls[event+1:]...)), dst, "a member record after event records"},
			{"a bad enum", join(replaceIn(ls, proc, `"state":"[A-Z_]*"`, `"state":"DONE"`)), dst, `state "DONE" is not`},
			{"a corrupt line near the end", join(replaceIn(ls, event, `"changes":`, `"changes":{`)), dst, "not a JSON object"},
			// Registration's rule: no credentials in a URL lists show, no
			// loopback or private host (unless the import is told).
			{"a webhook URL with credentials", join(replaceIn(ls, lineOf(t, ls, "webhook"), `"url":"[^"]*"`, `"url":"https://user:pw@hooks.example.com/x"`)), dst, "must not contain a user name or password"},
			{"a webhook URL on loopback", join(replaceIn(ls, lineOf(t, ls, "webhook"), `"url":"[^"]*"`, `"url":"http://127.0.0.1:9/x"`)), dst, "url: must not be a loopback address"},
			{"after its trailer", append(append([]byte{}, good...), ls[2]...), dst, "a line after the trailer"},
			{"its workspace already exists", good, src, "workspace already exists: " + w.ID},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := tenantRows(t, tc.target.DB, w.ID)
				_, err := archive.Import(context.Background(), tc.target.DB.Client, bytes.NewReader(tc.archive), archive.ImportOptions{})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("import: %v, want an error containing %q", err, tc.want)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("the error is not one line: %q", err)
				}
				t.Log(err)
				if got := tenantRows(t, tc.target.DB, w.ID); !equalRows(got, before) {
					t.Fatalf("rows of the workspace after a refused import: %v, before %v", got, before)
				}
				if got := tenantRows(t, dst.DB, kept.ID); !equalRows(got, keptRows) {
					t.Fatalf("the other workspace's rows changed: %v, were %v", got, keptRows)
				}
			})
		}
	})
}

func equalRows(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// flipping reads one archive on the first pass and another on the second:
// a file that changed between the import's validation and its writes.
type flipping struct {
	first, second []byte
	r             *bytes.Reader
	passes        int
}

func (f *flipping) Read(p []byte) (int, error) { return f.r.Read(p) }

func (f *flipping) Seek(off int64, whence int) (int64, error) {
	if off == 0 && whence == io.SeekStart {
		f.passes++
		f.r = bytes.NewReader(f.second)
	}
	return f.r.Seek(off, whence)
}

// TestImportThatFailsWhileWritingLeavesNothing: failures found only by the
// writes (a row the database refuses near the end; the file changed after
// it was validated, found once every row is written) roll the whole
// import back: no row of the workspace remains.
func TestImportThatFailsWhileWritingLeavesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		src := apitest.Start(t, db)
		w := src.NewWorkspace(t, "Acme", "ACME")
		seed(t, src, w, 4)
		good := export(t, src, w.AdminToken)
		ls := lines(good)
		other := src.NewWorkspace(t, "Other", "OTH")
		otherSeed := seed(t, src, other, 2)
		theirs := lines(export(t, src, other.AdminToken))
		dst := apitest.Start(t, dbtest.Open(t, dialectOf(db)))

		// The other workspace imported first; then Acme's last comment
		// takes the id of one of its comments: valid in the archive,
		// refused by the database's primary key, after the members,
		// projects, categories, procedures and other comments were
		// written.
		if _, err := archive.Import(context.Background(), dst.DB.Client, bytes.NewReader(join(theirs)), archive.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		theirComment := regexp.MustCompile(`"id":"[^"]*"`).FindString(string(theirs[lineOf(t, theirs, "comment")]))
		clash := join(replaceIn(ls, lineOf(t, ls, "comment"), `"id":"[^"]*"`, theirComment))
		otherRows := tenantRows(t, dst.DB, otherSeed.ID)
		_, err := archive.Import(context.Background(), dst.DB.Client, bytes.NewReader(clash), archive.ImportOptions{BatchSize: 2})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("import of a clashing comment: %v, want a one-line error", err)
		}
		t.Logf("clash: %v", err)
		for table, n := range tenantRows(t, dst.DB, w.ID) {
			if n != 0 {
				t.Errorf("%d rows of %s remain after a failed import", n, table)
			}
		}
		if got := tenantRows(t, dst.DB, otherSeed.ID); !equalRows(got, otherRows) {
			t.Fatalf("the other workspace's rows changed: %v, were %v", got, otherRows)
		}

		// The file changes between the passes: every row is written,
		// then the second pass's digest differs, and it all rolls back.
		changed := join(replaceIn(ls, lineOf(t, ls, "webhook"), `"url":"[^"]*"`, `"url":"https://attacker.example/"`))
		f := &flipping{first: good, second: changed, r: bytes.NewReader(good)}
		_, err = archive.Import(context.Background(), dst.DB.Client, f, archive.ImportOptions{BatchSize: 2})
		if err == nil || !strings.Contains(err.Error(), "the archive changed between its validation and its import") || f.passes != 1 {
			t.Fatalf("import of a file that changed: %v after %d seeks", err, f.passes)
		}
		for table, n := range tenantRows(t, dst.DB, w.ID) {
			if n != 0 {
				t.Errorf("%d rows of %s remain after a failed import", n, table)
			}
		}
		// And the archive itself, unchanged, imports.
		in, err := archive.Import(context.Background(), dst.DB.Client, bytes.NewReader(good), archive.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if in.WorkspaceID.String() != w.ID || in.Counts["comment"] != 5 {
			t.Fatalf("imported %+v", in)
		}
		_, err = archive.Import(context.Background(), dst.DB.Client, bytes.NewReader(good), archive.ImportOptions{})
		if !errors.Is(err, archive.ErrWorkspaceExists) {
			t.Fatalf("second import: %v, want ErrWorkspaceExists", err)
		}
	})
}

// dialectOf is db's dialect as dbtest names it.
func dialectOf(db *database.DB) string {
	if db.Dialect == "postgres" {
		return "postgres"
	}
	return "sqlite"
}

// TestImportTakesPrivateWebhooksWhenTold: a webhook endpoint on a private
// host, refused by default (registration's rule), is imported with
// WebhookAllowPrivateAddresses, as serve's --webhook-allow-private-addresses
// lets such endpoints be registered.
func TestImportTakesPrivateWebhooksWhenTold(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	src := apitest.Start(t, db)
	w := src.NewWorkspace(t, "Acme", "ACME")
	seed(t, src, w, 2)
	ls := lines(export(t, src, w.AdminToken))
	private := join(replaceIn(ls, lineOf(t, ls, "webhook"), `"url":"[^"]*"`, `"url":"http://10.1.2.3:8080/hook"`))
	dst := apitest.Start(t, dbtest.Open(t, "sqlite"))
	if _, err := archive.Import(context.Background(), dst.DB.Client, bytes.NewReader(private), archive.ImportOptions{}); err == nil {
		t.Fatal("a private webhook host was imported without being allowed")
	}
	if _, err := archive.Import(context.Background(), dst.DB.Client, bytes.NewReader(private), archive.ImportOptions{WebhookAllowPrivateAddresses: true}); err != nil {
		t.Fatalf("allowed: %v", err)
	}
}
