package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/migrate"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/transfer"
	"github.com/procsvc/procsvc/internal/webhooks"
)

// pairs is every (source, target) pair of the dialects this run covers.
func pairs(t *testing.T) [][2]string {
	var out [][2]string
	for _, a := range dbtest.Dialects(t) {
		for _, b := range dbtest.Dialects(t) {
			out = append(out, [2]string{a, b})
		}
	}
	return out
}

const procedurePage = `query($after: String) { procedures(first: 3, after: $after) {
	edges { cursor node { id shortId name position createdAt updatedAt content } }
	pageInfo { hasNextPage endCursor } } }`

const eventFeed = `query($after: Int!) { events(afterVersion: $after, order: ASC, first: 100) {
	nodes { id kind version createdAt entityId changes { field before after } } } }`

// TestCopyKeepsTheAPI: a copy serves what its source served. A pms_
// token authenticates on it, a GraphQL cursor of the source gives the same
// next page, a replay afterVersion gives the same events, the webhook
// endpoint's secret signs its deliveries, and writes work (keys drawn
// from sequences do not collide with the copied ones). Copied back into
// the source's dialect, every row is the source's.
func TestCopyKeepsTheAPI(t *testing.T) {
	for _, p := range pairs(t) {
		t.Run(p[0]+"_to_"+p[1], func(t *testing.T) {
			ctx := context.Background()
			f := populate(t, p[0], 8)

			// What the source answers, read before the copy.
			var first struct {
				Procedures struct {
					PageInfo struct{ EndCursor string }
				}
			}
			srcPage := gql(t, f.srv, f.ws.MemberToken, procedurePage, nil)
			if err := json.Unmarshal(srcPage, &first); err != nil {
				t.Fatal(err)
			}
			cursor := first.Procedures.PageInfo.EndCursor
			srcNext := gql(t, f.srv, f.ws.MemberToken, procedurePage, map[string]any{"after": cursor})
			srcEvents := gql(t, f.srv, f.ws.AdminToken, eventFeed, map[string]any{"after": 3})

			dst := emptyDB(t, p[1])
			res, err := transfer.Copy(ctx, f.db, dst, transfer.Options{BatchRows: 3})
			if err != nil {
				t.Fatalf("Copy: %v", err)
			}
			var copied []string
			for _, tc := range res.Tables {
				copied = append(copied, tc.Table)
				if tc.Copied != tc.Rows || tc.Rows == 0 {
					t.Errorf("table %s: %d rows copied of %d", tc.Table, tc.Copied, tc.Rows)
				}
			}
			for _, tbl := range migrate.Tables {
				if !slices.Contains(copied, tbl.Name) {
					t.Errorf("table %s of the schema was not copied", tbl.Name)
				}
			}
			if got, want := counts(t, dst), counts(t, f.db); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("target's rows %v, source's %v", got, want)
			}

			// Back into the source's dialect, before the copy serves a
			// request (a token's use is a write).
			back := emptyDB(t, p[0])
			if _, err := transfer.Copy(ctx, dst, back, transfer.Options{}); err != nil {
				t.Fatalf("copy back: %v", err)
			}
			if _, err := transfer.Verify(ctx, f.db, back, transfer.Options{}); err != nil {
				t.Fatalf("the source and its copy's copy: %v", err)
			}

			srv := apitest.Start(t, dst, core.WithPrivateWebhookAddresses(true))
			// The member's pms_ token (its hash copied) authenticates the
			// reads below.
			if !strings.HasPrefix(f.ws.MemberToken, "pms_") {
				t.Fatalf("token %q is not a pms_ token", f.ws.MemberToken)
			}
			if got := gql(t, srv, f.ws.MemberToken, procedurePage, map[string]any{"after": cursor}); !bytes.Equal(got, srcNext) {
				t.Errorf("the source's cursor on the copy:\n%s\nthe source answered:\n%s", got, srcNext)
			}
			if got := gql(t, srv, f.ws.AdminToken, eventFeed, map[string]any{"after": 3}); !bytes.Equal(got, srcEvents) {
				t.Errorf("events after version 3 on the copy:\n%s\nthe source answered:\n%s", got, srcEvents)
			}
			if r := srv.GraphQL(t, f.ws.ViewToken, `{ procedures(first: 1) { nodes { id } } }`, nil); len(r.Errors) == 0 || r.Errors[0].Extensions.Reason != "token_revoked" {
				t.Errorf("the revoked token on the copy: %d %+v", r.Status, r.Errors)
			}

			// Writes: a new workspace's first procedure (a tally row) and
			// an idempotent request (a key and a budget row) draw keys
			// from the target's sequences.
			gamma := srv.NewWorkspace(t, "Gamma", "GAM")
			if status, body := f.rest(t, srv, gamma.AdminToken, "POST", "/categories", `{"name":"After the copy"}`, "key-1"); status/100 != 2 {
				t.Fatalf("idempotent POST on the copy: %d %s", status, body)
			}
			admin, err := srv.Service.ActAsAdmin(ctx, gamma.ID)
			if err != nil {
				t.Fatal(err)
			}
			due := time.Now().Add(time.Hour)
			if _, err := srv.Service.CreateProcedure(admin, core.CreateProcedureInput{Name: "After", Priority: "LOW", State: "TODO", DueAt: &due,
				CategoryID: gamma.CategoryID, DoerID: gamma.AdminID, ProjectID: gamma.ProjectID}); err != nil {
				t.Fatalf("a procedure on the copy: %v", err)
			}
			// Alpha's procedure numbers continue where the source's were.
			wsAdmin, err := srv.Service.ActAsAdmin(ctx, f.ws.ID)
			if err != nil {
				t.Fatal(err)
			}
			next, err := srv.Service.CreateProcedure(wsAdmin, core.CreateProcedureInput{Name: "Next", Priority: "LOW", State: "TODO", DueAt: &due,
				CategoryID: f.ws.CategoryID, DoerID: f.ws.AdminID, ProjectID: f.ws.ProjectID})
			if err != nil {
				t.Fatal(err)
			}
			if next.Number != int64(len(f.procedures)+1) || next.ShortID != fmt.Sprintf("ALP-%d", len(f.procedures)+1) {
				t.Errorf("the next procedure on the copy: number %d, %s; want %d", next.Number, next.ShortID, len(f.procedures)+1)
			}
			// The comment count's triggers are the target's again.
			var before, after int
			count := `SELECT comment_count FROM procedures WHERE id = ` + param(dst, 1)
			if err := dst.SQL.QueryRow(count, f.procedures[0]).Scan(&before); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Service.AddComment(wsAdmin, f.procedures[0], "on the copy"); err != nil {
				t.Fatal(err)
			}
			if err := dst.SQL.QueryRow(count, f.procedures[0]).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if before != 3 || after != 4 {
				t.Errorf("comment count %d, then %d after a comment on the copy; want 3, then 4", before, after)
			}

			// The endpoint's secret, as createWebhook answered it on the
			// source, verifies what the copy sends.
			seen := f.receiver.count()
			d := webhooks.New(dst.Client, dst.Dialect, webhooks.Options{AllowPrivate: true, PollInterval: 20 * time.Millisecond, Jitter: -1})
			d.Start()
			t.Cleanup(d.Close)
			eventually(t, "the comment's delivery", func() bool { return f.receiver.count() > seen })
			for _, got := range f.receiver.deliveries()[seen:] {
				if err := webhooks.Verify(f.secret, got.signature, got.body, 0); err != nil {
					t.Errorf("delivery of %s from the copy: %v", got.eventID, err)
				}
			}
		})
	}
}

func param(db *database.DB, n int) string {
	if db.Dialect == "postgres" {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// TestCopyResumes: a copy interrupted after some batches (its context
// cancelled, as Ctrl-C does) and run again finishes where it stopped, and
// the target is verified identical; a third run has nothing left to copy.
func TestCopyResumes(t *testing.T) {
	for _, p := range pairs(t) {
		t.Run(p[0]+"_to_"+p[1], func(t *testing.T) {
			f := populate(t, p[0], 12)
			dstURL := emptyURL(t, p[1])
			for _, stopAfter := range []int{7, 15} {
				ctx, cancel := context.WithCancel(context.Background())
				batches := 0
				_, err := transfer.Copy(ctx, f.db, openURL(t, dstURL), transfer.Options{BatchRows: 2, AfterBatch: func(string, int) {
					if batches++; batches == stopAfter {
						cancel()
					}
				}})
				cancel()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("interrupted after %d batches: %v, want context.Canceled", stopAfter, err)
				}
			}
			dst := openURL(t, dstURL)
			res, err := transfer.Copy(context.Background(), f.db, dst, transfer.Options{BatchRows: 2})
			if err != nil {
				t.Fatalf("resumed: %v", err)
			}
			var resumed, copied int64
			for _, tc := range res.Tables {
				resumed += tc.Resumed
				copied += tc.Copied
				if tc.Resumed+tc.Copied != tc.Rows {
					t.Errorf("%s: %d resumed + %d copied, of %d", tc.Table, tc.Resumed, tc.Copied, tc.Rows)
				}
			}
			// Two interruptions, after 7 and 15 batches of 2 rows at most.
			if resumed == 0 || resumed > 44 || copied == 0 {
				t.Errorf("%d rows kept from the interrupted runs, %d copied now", resumed, copied)
			}
			res, err = transfer.Copy(context.Background(), f.db, dst, transfer.Options{})
			if err != nil {
				t.Fatalf("run again: %v", err)
			}
			for _, tc := range res.Tables {
				if tc.Copied != 0 || tc.Resumed != tc.Rows {
					t.Errorf("run again, %s: %+v", tc.Table, tc)
				}
			}
		})
	}
}

// TestVerifyNamesTheDifference: one column of one row changed in the
// target fails verification, naming the table, the workspace, the key and
// the column; so does a row deleted, and a NULL made empty.
func TestVerifyNamesTheDifference(t *testing.T) {
	for _, p := range pairs(t) {
		t.Run(p[0]+"_to_"+p[1], func(t *testing.T) {
			ctx := context.Background()
			f := populate(t, p[0], 4)
			dst := emptyDB(t, p[1])
			if _, err := transfer.Copy(ctx, f.db, dst, transfer.Options{}); err != nil {
				t.Fatal(err)
			}
			pairT := t
			for _, c := range []struct {
				name, stmt, table, key, reason string
			}{
				{"a column", `UPDATE "procedures" SET "name" = 'Changed' WHERE "id" = ` + param(dst, 1), "procedures", f.procedures[2], "column name differs"},
				{"a position by a hair", `UPDATE "procedures" SET "position" = "position" + 0.000001 WHERE "id" = ` + param(dst, 1), "procedures", f.procedures[1], "column position differs"},
				{"NULL made empty", `UPDATE "procedures" SET "content" = '' WHERE "id" = ` + param(dst, 1), "procedures", f.procedures[1], "column content differs"},
				{"a row deleted", `DELETE FROM "webhook_deliveries" WHERE "id" = ` + param(dst, 1), "webhook_deliveries", "", "in the source, not in the target"},
			} {
				t.Run(c.name, func(t *testing.T) {
					key := c.key
					if key == "" {
						if err := dst.SQL.QueryRow(`SELECT "id" FROM "` + c.table + `" ORDER BY "id" LIMIT 1`).Scan(&key); err != nil {
							t.Fatal(err)
						}
					}
					tx, err := dst.SQL.Begin()
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback()
					if _, err := tx.Exec(c.stmt, key); err != nil {
						t.Fatal(err)
					}
					// Verify reads the target in a transaction of its
					// own: the change is committed, then undone.
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
					_, err = transfer.Verify(ctx, f.db, dst, transfer.Options{})
					var diff *transfer.ErrDifferent
					if !errors.As(err, &diff) {
						t.Fatalf("Verify after %s: %v, want a difference", c.name, err)
					}
					d := diff.Diffs[0]
					if len(diff.Diffs) != 1 || d.Table != c.table || d.Workspace != f.ws.ID || !strings.Contains(err.Error(), c.reason) {
						t.Errorf("Verify: %v (%d differences), want %s, workspace %s: %s", err, len(diff.Diffs), c.table, f.ws.ID, c.reason)
					}
					if fmt.Sprint(d.Key) != key {
						t.Errorf("first differing key %v, want %s", d.Key, key)
					}
					// Undone by copying the source's row over it: the
					// test's own repair, through a fresh copy.
					repaired := emptyDB(pairT, p[1])
					if _, err := transfer.Copy(ctx, f.db, repaired, transfer.Options{}); err != nil {
						t.Fatal(err)
					}
					dst = repaired
				})
			}
		})
	}
}

// TestCopyRefusesOtherData: a target holding a workspace the source lacks,
// or a row that is not the source's (an interrupted copy's target changed
// since), is refused before anything is written to it.
func TestCopyRefusesOtherData(t *testing.T) {
	for _, p := range pairs(t) {
		t.Run(p[0]+"_to_"+p[1], func(t *testing.T) {
			ctx := context.Background()
			f := populate(t, p[0], 4)

			other := dbtest.Open(t, p[1])
			if _, err := core.New(other.Client).CreateWorkspace(ctx, core.NewWorkspace{Name: "Theirs", Key: "THR", AdminName: "T", AdminEmail: "t@theirs.example"}); err != nil {
				t.Fatal(err)
			}
			before := counts(t, other)
			_, err := transfer.Copy(ctx, f.db, other, transfer.Options{})
			var refused *transfer.ErrOtherData
			if !errors.As(err, &refused) || refused.Diff.Table != "workspaces" {
				t.Fatalf("Copy into a database with a workspace of its own: %v", err)
			}
			if after := counts(t, other); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the refused target changed: %v, was %v", after, before)
			}

			// An interrupted copy whose target was changed since.
			dstURL := emptyURL(t, p[1])
			cctx, cancel := context.WithCancel(ctx)
			_, err = transfer.Copy(cctx, f.db, openURL(t, dstURL), transfer.Options{BatchRows: 1, AfterBatch: func(table string, _ int) {
				if table == "members" {
					cancel()
				}
			}})
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted: %v", err)
			}
			dst := openURL(t, dstURL)
			if _, err := dst.SQL.Exec(`UPDATE "workspaces" SET "name" = 'Renamed' WHERE "id" = `+param(dst, 1), f.ws.ID); err != nil {
				t.Fatal(err)
			}
			before = counts(t, dst)
			_, err = transfer.Copy(ctx, f.db, dst, transfer.Options{})
			if !errors.As(err, &refused) || refused.Diff.Table != "workspaces" || fmt.Sprint(refused.Diff.Key) != f.ws.ID ||
				!strings.Contains(err.Error(), "column name differs") {
				t.Fatalf("Copy into a changed target: %v", err)
			}
			if after := counts(t, dst); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the refused target changed: %v, was %v", after, before)
			}
		})
	}
}

// TestBatchBounds: batches end at the byte budget as at the row count
// (a row larger than the budget is a batch of its own), and a batch wider
// than a statement's arguments allow is written in several statements.
func TestBatchBounds(t *testing.T) {
	for _, p := range pairs(t) {
		t.Run(p[0]+"_to_"+p[1], func(t *testing.T) {
			ctx := context.Background()
			f := populate(t, p[0], 40)
			admin, err := f.srv.Service.ActAsAdmin(ctx, f.ws.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.srv.Service.AddComment(admin, f.procedures[1], strings.Repeat("long ", 4000)); err != nil {
				t.Fatal(err)
			}
			// A byte budget smaller than any row: a row a batch.
			dst := emptyDB(t, p[1])
			res, err := transfer.Copy(ctx, f.db, dst, transfer.Options{BatchRows: 1000, BatchBytes: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range res.Tables {
				if int64(tc.Batches) != tc.Copied {
					t.Errorf("%s: %d rows in %d batches under a 1-byte budget", tc.Table, tc.Copied, tc.Batches)
				}
			}
			// The most rows a batch may hold, written in statements of
			// at most 50 arguments (two procedures): as a batch of 50000
			// procedures is, past both dialects' limit for one statement.
			defer transfer.SetMaxParams(50)()
			dst = emptyDB(t, p[1])
			res, err = transfer.Copy(ctx, f.db, dst, transfer.Options{BatchRows: transfer.MaxBatchRows, BatchBytes: transfer.MaxBatchBytes})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range res.Tables {
				if tc.Batches != 1 {
					t.Errorf("%s: %d batches, want 1", tc.Table, tc.Batches)
				}
			}
		})
	}
}

// TestProgress: a line per table reaches the progress writer.
func TestProgress(t *testing.T) {
	f := populate(t, "sqlite", 2)
	var out bytes.Buffer
	if _, err := transfer.Copy(context.Background(), f.db, emptyDB(t, "sqlite"), transfer.Options{Progress: &out}); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range migrate.Tables {
		want := fmt.Sprintf("copy: %s: %d/%d rows (done", tbl.Name, rows(t, f.db, tbl.Name), rows(t, f.db, tbl.Name))
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, out.String())
		}
	}
}
