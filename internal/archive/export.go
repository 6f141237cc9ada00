package archive

import (
	"context"
	stdsql "database/sql"
	"encoding/json"
	"fmt"
	"io"
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

// DefaultPageSize is how many records the export reads at a time: what it
// holds in memory at most (a page of procedures of maximal content is
// about 200 × 800 KB in the worst case, 200 × 1 KB usually).
const DefaultPageSize = 200

// DefaultTimeout is the longest an HTTP download of an archive may take
// (--export-timeout): 100 000 procedures are about 100 MB, which takes
// 30 minutes at 60 KB/s.
const DefaultTimeout = 30 * time.Minute

// ExportOptions tune an export; the zero value is the default.
type ExportOptions struct {
	// PageSize is the records read per statement (DefaultPageSize if 0).
	PageSize int
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
func pages[T any, K any](ctx context.Context, e *exporter, typ string, read func(after *K, n int) ([]T, error), key func(T) K, conv func(T) any) error {
	var after *K
	for {
		page, err := read(after, e.opts.PageSize)
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
		if len(page) < e.opts.PageSize {
			return ctx.Err()
		}
		k := key(page[len(page)-1])
		after = &k
	}
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
	if err := pages(ctx, e, TypeMember, func(after *uuid.UUID, n int) ([]*ent.Member, error) {
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
	if err := pages(ctx, e, TypeProject, func(after *uuid.UUID, n int) ([]*ent.Project, error) {
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
	if err := pages(ctx, e, TypeCategory, func(after *uuid.UUID, n int) ([]*ent.Category, error) {
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
	if err := pages(ctx, e, TypeProcedure, func(after *procedureKey, n int) ([]*ent.Procedure, error) {
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
		return q.All(ctx)
	}, func(p *ent.Procedure) procedureKey { return procedureKey{p.CreatedAt, p.ID} }, func(p *ent.Procedure) any {
		return ProcedureRecord{Type: TypeProcedure, ID: p.ID, Number: p.Number, ShortID: p.ShortID, Name: p.Name,
			Priority: string(p.Priority), State: string(p.State), Content: p.Content, CategoryID: p.CategoryID,
			DoerID: p.DoerID, CreatorID: p.CreatorID, ProjectID: p.ProjectID, Position: p.Position, DueAt: p.DueAt.UTC(),
			CaptureID: p.CaptureID, DisplayVideo: p.DisplayVideo, IsFineTunedData: p.IsFineTunedData,
			CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
	}); err != nil {
		return err
	}
	if err := pages(ctx, e, TypeComment, func(after *uuid.UUID, n int) ([]*ent.Comment, error) {
		q := tx.Comment.Query().Order(comment.ByID()).Limit(n)
		if after != nil {
			q.Where(comment.IDGT(*after))
		}
		return q.All(ctx)
	}, func(c *ent.Comment) uuid.UUID { return c.ID }, func(c *ent.Comment) any {
		return CommentRecord{Type: TypeComment, ID: c.ID, ProcedureID: c.ProcedureID, AuthorID: c.AuthorID, Text: c.Text,
			CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	}); err != nil {
		return err
	}
	if err := pages(ctx, e, TypeEvent, func(after *int64, n int) ([]*ent.Event, error) {
		q := tx.Event.Query().Order(event.ByVersion()).Limit(n)
		if after != nil {
			q.Where(event.VersionGT(*after))
		}
		return q.All(ctx)
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
	return pages(ctx, e, TypeWebhook, func(after *uuid.UUID, n int) ([]*ent.WebhookEndpoint, error) {
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
