package archive

import (
	"context"
	stdsql "database/sql"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/event"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/ent/webhookendpoint"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/viewer"
)

// DefaultPageSize is how many records the export reads at a time, at
// most: records with large text (procedures, comments, events) are also
// bounded by DefaultPageBytes.
const DefaultPageSize = 200

// DefaultTimeout is the longest an HTTP download of an archive may take
// (--export-timeout): 100 000 procedures are about 100 MB, which takes
// 30 minutes at 60 KB/s.
const DefaultTimeout = 30 * time.Minute

// DefaultPageBytes bounds the large text a page holds (procedures'
// content, comments' text, events' changes and facets): with at most
// DefaultPageSize records, it is what an export holds at once, about
// 4 MiB however large a workspace's records are (a procedure's content
// alone may be 800 KB).
const DefaultPageBytes = 4 << 20

// ExportOptions tune an export; the zero value is the default.
type ExportOptions struct {
	// PageSize is the records read per statement (DefaultPageSize if 0).
	PageSize int
	// PageBytes bounds the large text a page holds, one record at least
	// (DefaultPageBytes if 0).
	PageBytes int64
	// Dialect is the database's ent dialect: PostgreSQL's snapshot needs
	// REPEATABLE READ, SQLite's read transaction is one already.
	Dialect string
	// Started, if set, is called once the snapshot is taken and before
	// anything is written: after it, a failure can no longer be answered
	// with an error body (the HTTP download's status is sent).
	Started func(Header)
	// PageRead, if set, is told the records of each page read, before
	// they are written (tests prove the export reads no further ahead).
	PageRead func(typ string, n int)
	// IdleTimeout and Timeout bound Handler's download, not Export: with
	// IdleTimeout set, the download may outlast the server's write
	// timeout as long as the client keeps taking it (a write that blocks
	// for IdleTimeout ends it: --write-timeout), and it ends after Timeout
	// in all however steadily the client reads (DefaultTimeout if 0:
	// --export-timeout), which bounds the read transaction it holds open.
	// With IdleTimeout 0 the download is an ordinary request, under the
	// server's write timeout as a whole.
	IdleTimeout, Timeout time.Duration
	// Limiter, if set, bounds Handler's downloads in flight.
	Limiter *Limiter

	now func() time.Time
}

// Exported is what an export wrote.
type Exported struct {
	Header Header
	Counts map[string]int64
}

// Export writes the workspace of ctx's viewer, who must be an admin, to w
// as an archive: one read-only transaction, read page by page by key, each
// page written before the next is read. Tenancy is ent's (internal/tenancy):
// every statement is scoped to the viewer's workspace.
// Errors: unauthenticated, forbidden; after Started, what writing to w or
// reading the database returned (the archive then has no trailer, which
// the import refuses).
func Export(ctx context.Context, client *ent.Client, w io.Writer, opts ExportOptions) (*Exported, error) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, apperr.New(apperr.Unauthenticated, "authentication required")
	}
	if !v.Role.AtLeast(viewer.RoleAdmin) {
		return nil, apperr.New(apperr.Forbidden, "this action needs the %s role", viewer.RoleAdmin)
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.PageBytes <= 0 {
		opts.PageBytes = DefaultPageBytes
	}
	if opts.now == nil {
		opts.now = func() time.Time { return time.Now().UTC() }
	}
	txOpts := &stdsql.TxOptions{ReadOnly: true}
	if opts.Dialect == dialect.Postgres {
		// One snapshot for every statement of the transaction.
		txOpts.Isolation = stdsql.LevelRepeatableRead
	}
	tx, err := client.BeginTx(ctx, txOpts)
	if err != nil {
		return nil, apperr.Map(err)
	}
	// Read-only: rolling back is how it ends.
	defer tx.Rollback()
	ws, err := tx.Workspace.Query().Only(ctx)
	if err != nil {
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("workspace")
		}
		return nil, apperr.Map(err)
	}
	e := &exporter{w: w, opts: opts, counts: map[string]int64{}}
	out := &Exported{Header: Header{Format: Format, Version: Version, ExportedAt: opts.now(), WorkspaceID: ws.ID, WorkspaceVersion: ws.Version}, Counts: e.counts}
	if opts.Started != nil {
		opts.Started(out.Header)
	}
	if err := e.line(out.Header); err != nil {
		return out, err
	}
	if err := e.record(TypeWorkspace, WorkspaceRecord{Type: TypeWorkspace, ID: ws.ID, Name: ws.Name, Key: ws.Key,
		ProcedureSeq: ws.ProcedureSeq, Version: ws.Version, EventsPrunedTo: ws.EventsPrunedTo, CreatedAt: ws.CreatedAt.UTC()}); err != nil {
		return out, err
	}
	if err := e.body(ctx, tx); err != nil {
		return out, err
	}
	counts := make(map[string]int64, len(Types))
	for _, t := range Types {
		counts[t] = e.counts[t]
	}
	return out, e.line(Trailer{Type: TypeTrailer, Counts: counts})
}

// exporter writes an archive's lines.
type exporter struct {
	w      io.Writer
	opts   ExportOptions
	counts map[string]int64
}

// line writes v as one line.
func (e *exporter) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxLineBytes {
		// The import would refuse it: refuse it here, by name.
		return fmt.Errorf("archive: a record of %d bytes exceeds the %d bytes of a line", len(b), MaxLineBytes)
	}
	_, err = e.w.Write(append(b, '\n'))
	return err
}

// record writes one record of typ and counts it.
func (e *exporter) record(typ string, v any) error {
	if err := e.line(v); err != nil {
		return err
	}
	e.counts[typ]++
	return nil
}

// pages reads the records of one type a page at a time, each page after
// the last key of the one before, and writes each before reading the next.
// With sizes, which gives the bytes of the large text of each of the next
// n records (their key and a length only, off the same snapshot), a page
// takes as many of them as fit in PageBytes, one at least: a page of
// procedures of maximal content would otherwise hold PageSize × 800 KB.
func pages[T any, K any](ctx context.Context, e *exporter, typ string, sizes func(after *K, n int) ([]int64, error), read func(after *K, n int) ([]T, error), key func(T) K, conv func(T) any) error {
	var after *K
	for {
		n := e.opts.PageSize
		if sizes != nil {
			next, err := sizes(after, n)
			if err != nil {
				return apperr.Map(err)
			}
			if len(next) == 0 {
				return ctx.Err()
			}
			n = fit(next, e.opts.PageBytes)
		}
		page, err := read(after, n)
		if err != nil {
			return apperr.Map(err)
		}
		if e.opts.PageRead != nil {
			e.opts.PageRead(typ, len(page))
		}
		for _, r := range page {
			if err := e.record(typ, conv(r)); err != nil {
				return err
			}
		}
		if len(page) < n {
			return ctx.Err()
		}
		k := key(page[len(page)-1])
		after = &k
	}
}

// scanner is ent's selection of a query's columns.
type scanner interface {
	Scan(ctx context.Context, v any) error
}

// sizedQuery is a query of records (its order and page), which textSizes
// reads only the lengths of.
type sizedQuery[S scanner] interface {
	Modify(...func(*sql.Selector)) S
}

// textSizes is the bytes of the columns of each record q reads, in q's
// order, counted by the database (octet_length: PostgreSQL takes it from a
// stored value's header, SQLite from its record's, neither reads the text).
func textSizes[S scanner](ctx context.Context, dialectName string, q sizedQuery[S], columns ...string) ([]int64, error) {
	var rows []struct {
		Size stdsql.NullInt64 `sql:"size"`
	}
	err := q.Modify(func(s *sql.Selector) {
		sum := make([]string, len(columns))
		for i, c := range columns {
			col := s.C(c)
			if dialectName == dialect.Postgres {
				// jsonb has no octet_length; text::text is no cast at
				// all, so content's length still comes off its header.
				col += "::text"
			}
			sum[i] = "COALESCE(octet_length(" + col + "), 0)"
		}
		s.Select(sql.As(strings.Join(sum, " + "), "size"))
	}).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(rows))
	for i, r := range rows {
		sizes[i] = r.Size.Int64
	}
	return sizes, nil
}

// fit is how many of the records whose sizes are given, in order, a page
// of budget bytes takes: those that fit, and the first one at least.
func fit(sizes []int64, budget int64) int {
	var total int64
	for i, size := range sizes {
		if total += size; total > budget && i > 0 {
			return i
		}
	}
	return len(sizes)
}

// procedureKey is where a page of procedures ends.
type procedureKey struct {
	createdAt time.Time
	id        uuid.UUID
}

// body writes every record after the workspace's, in Types' order.
func (e *exporter) body(ctx context.Context, tx *ent.Tx) error {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	if err := pages(ctx, e, TypeMember, nil, func(after *uuid.UUID, n int) ([]*ent.Member, error) {
		q := tx.Member.Query().Order(member.ByID()).Limit(n)
		if after != nil {
			q.Where(member.IDGT(*after))
		}
		return q.All(ctx)
	}, func(m *ent.Member) uuid.UUID { return m.ID }, func(m *ent.Member) any {
		return MemberRecord{Type: TypeMember, ID: m.ID, Name: m.Name, Email: m.Email, Role: string(m.Role),
			CreatedAt: m.CreatedAt.UTC(), RemovedAt: utc(m.RemovedAt)}
	}); err != nil {
		return err
	}
	if err := pages(ctx, e, TypeProject, nil, func(after *uuid.UUID, n int) ([]*ent.Project, error) {
		q := tx.Project.Query().Order(project.ByID()).Limit(n)
		if after != nil {
			q.Where(project.IDGT(*after))
		}
		return q.All(ctx)
	}, func(p *ent.Project) uuid.UUID { return p.ID }, func(p *ent.Project) any {
		return ProjectRecord{Type: TypeProject, ID: p.ID, Name: p.Name, StartedAt: utc(p.StartedAt), DueAt: utc(p.DueAt),
			CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
	}); err != nil {
		return err
	}
	if err := pages(ctx, e, TypeCategory, nil, func(after *uuid.UUID, n int) ([]*ent.Category, error) {
		q := tx.Category.Query().Order(category.ByID()).Limit(n)
		if after != nil {
			q.Where(category.IDGT(*after))
		}
		return q.All(ctx)
	}, func(c *ent.Category) uuid.UUID { return c.ID }, func(c *ent.Category) any {
		return CategoryRecord{Type: TypeCategory, ID: c.ID, Name: c.Name, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	}); err != nil {
		return err
	}
	// Procedures by (createdAt, id), the order of an index led by the
	// workspace: by id alone, SQLite read the workspace's procedures
	// through another of its indexes and sorted them all for each page
	// (100 000 procedures: 35 s instead of 2).
	procedures := func(after *procedureKey, n int) *ent.ProcedureQuery {
		q := tx.Procedure.Query().Order(procedure.ByCreatedAt(), procedure.ByID()).Limit(n)
		if after != nil {
			q.Where(func(s *sql.Selector) {
				s.Where(sql.P(func(b *sql.Builder) {
					b.WriteString("(" + s.C(procedure.FieldCreatedAt) + ", " + s.C(procedure.FieldID) + ") > (")
					b.Args(after.createdAt, after.id)
					b.WriteString(")")
				}))
			})
		}
		return q
	}
	if err := pages(ctx, e, TypeProcedure, func(after *procedureKey, n int) ([]int64, error) {
		return textSizes(ctx, e.opts.Dialect, procedures(after, n), procedure.FieldContent)
	}, func(after *procedureKey, n int) ([]*ent.Procedure, error) {
		return procedures(after, n).All(ctx)
	}, func(p *ent.Procedure) procedureKey { return procedureKey{p.CreatedAt, p.ID} }, func(p *ent.Procedure) any {
		return ProcedureRecord{Type: TypeProcedure, ID: p.ID, Number: p.Number, ShortID: p.ShortID, Name: p.Name,
			Priority: string(p.Priority), State: string(p.State), Content: p.Content, CategoryID: p.CategoryID,
			DoerID: p.DoerID, CreatorID: p.CreatorID, ProjectID: p.ProjectID, Position: p.Position, DueAt: p.DueAt.UTC(),
			CaptureID: p.CaptureID, DisplayVideo: p.DisplayVideo, IsFineTunedData: p.IsFineTunedData,
			CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
	}); err != nil {
		return err
	}
	comments := func(after *uuid.UUID, n int) *ent.CommentQuery {
		q := tx.Comment.Query().Order(comment.ByID()).Limit(n)
		if after != nil {
			q.Where(comment.IDGT(*after))
		}
		return q
	}
	if err := pages(ctx, e, TypeComment, func(after *uuid.UUID, n int) ([]int64, error) {
		return textSizes(ctx, e.opts.Dialect, comments(after, n), comment.FieldText)
	}, func(after *uuid.UUID, n int) ([]*ent.Comment, error) {
		return comments(after, n).All(ctx)
	}, func(c *ent.Comment) uuid.UUID { return c.ID }, func(c *ent.Comment) any {
		return CommentRecord{Type: TypeComment, ID: c.ID, ProcedureID: c.ProcedureID, AuthorID: c.AuthorID, Text: c.Text,
			CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	}); err != nil {
		return err
	}
	events := func(after *int64, n int) *ent.EventQuery {
		q := tx.Event.Query().Order(event.ByVersion()).Limit(n)
		if after != nil {
			q.Where(event.VersionGT(*after))
		}
		return q
	}
	if err := pages(ctx, e, TypeEvent, func(after *int64, n int) ([]int64, error) {
		return textSizes(ctx, e.opts.Dialect, events(after, n), event.FieldChanges, event.FieldFacets)
	}, func(after *int64, n int) ([]*ent.Event, error) {
		return events(after, n).All(ctx)
	}, func(ev *ent.Event) int64 { return ev.Version }, func(ev *ent.Event) any {
		r := EventRecord{Type: TypeEvent, ID: ev.ID, Version: ev.Version, Kind: ev.Kind, EntityID: ev.EntityID,
			ProcedureID: ev.ProcedureID, ProjectID: ev.ProjectID, ActorMemberID: ev.ActorMemberID, ActorTokenID: ev.ActorTokenID,
			CreatedAt: ev.CreatedAt.UTC(), Changes: json.RawMessage(ev.Changes), Facets: json.RawMessage("null")}
		if ev.Facets != nil {
			r.Facets = json.RawMessage(*ev.Facets)
		}
		return r
	}); err != nil {
		return err
	}
	return pages(ctx, e, TypeWebhook, nil, func(after *uuid.UUID, n int) ([]*ent.WebhookEndpoint, error) {
		q := tx.WebhookEndpoint.Query().Order(webhookendpoint.ByID()).Limit(n)
		if after != nil {
			q.Where(webhookendpoint.IDGT(*after))
		}
		return q.All(ctx)
	}, func(h *ent.WebhookEndpoint) uuid.UUID { return h.ID }, func(h *ent.WebhookEndpoint) any {
		// Never the secret.
		return WebhookRecord{Type: TypeWebhook, ID: h.ID, URL: h.URL, Kinds: json.RawMessage(h.Kinds), ProjectID: h.ProjectID,
			Enabled: h.Enabled, CreatedAt: h.CreatedAt.UTC(), UpdatedAt: h.UpdatedAt.UTC()}
	})
}
