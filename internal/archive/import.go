package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/workspace"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/viewer"
)

// DefaultBatchSize is the rows per INSERT of the import: 500 procedures ×
// 20 columns stay under both SQLite's and PostgreSQL's bound-parameter
// limits, and a batch is all the import holds of the records it writes.
const DefaultBatchSize = 500

// DefaultBatchBytes bounds the archive's bytes a batch holds besides its
// rows: 500 procedures of the largest content would be 400 MB.
const DefaultBatchBytes = 8 << 20

// ImportOptions tune an import; the zero value is the default.
type ImportOptions struct {
	// BatchSize is the rows per INSERT (DefaultBatchSize if 0), and
	// BatchBytes the archive's bytes they may take, one row at least
	// (DefaultBatchBytes if 0).
	BatchSize  int
	BatchBytes int
	// MaxLineBytes bounds a line (MaxLineBytes if 0; tests lower it).
	MaxLineBytes int
	// WebhookAllowPrivateAddresses lets webhook endpoints name private
	// hosts, as serve's --webhook-allow-private-addresses lets their
	// registration: an endpoint's URL passes the rule it would have to
	// pass to be registered here.
	WebhookAllowPrivateAddresses bool
}

// Imported is the outcome of an import.
type Imported struct {
	WorkspaceID uuid.UUID
	Name        string
	Counts      map[string]int64
	// Admin is the member the fresh token was issued to: the archive's
	// earliest-created active ADMIN.
	Admin   uuid.UUID
	Email   string
	TokenID uuid.UUID
	// Secret is the token's secret, shown once: tokens are never exported.
	Secret string
}

// ErrWorkspaceExists refuses an archive whose workspace id is already in
// the database: ids are kept, so a second import would collide.
var ErrWorkspaceExists = errors.New("workspace already exists")

// Import writes the archive read from r into client's database as a new
// workspace with the archive's ids, and issues a token for its first active
// admin. It reads r twice: the first pass (Validate) checks every line and
// writes nothing; the second (Write) writes every record in batches inside
// one transaction, which commits only if the second pass read the very
// bytes the first validated. Anything refused or failed leaves the
// database as it was.
func Import(ctx context.Context, client *ent.Client, r io.ReadSeeker, opts ImportOptions) (*Imported, error) {
	v, err := Validate(r, opts)
	if err != nil {
		return nil, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return v.Write(ctx, client, r)
}

// Validated is an archive whose every line the first pass checked.
type Validated struct {
	checked *checked
	opts    ImportOptions
}

// WorkspaceID is the id of the archive's workspace.
func (v *Validated) WorkspaceID() uuid.UUID { return v.checked.workspace.ID }

// Validate is the import's first pass: it reads the whole archive from r
// and checks it, needing no database (the CLI runs it before opening one,
// so that a refused archive creates no database file either).
func Validate(r io.Reader, opts ImportOptions) (*Validated, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = MaxLineBytes
	}
	c, err := validate(newLineReader(r, opts.MaxLineBytes), opts.WebhookAllowPrivateAddresses)
	if err != nil {
		return nil, err
	}
	return &Validated{checked: c, opts: opts}, nil
}

// Write is the import's second pass: r must read the archive Validate read,
// from its start. It refuses an archive whose workspace is in the database
// already.
func (v *Validated) Write(ctx context.Context, client *ent.Client, r io.Reader) (*Imported, error) {
	c := v.checked
	ctx = viewer.System(ctx)
	exists, err := client.Workspace.Query().Where(workspace.ID(c.workspace.ID)).Exist(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	if exists {
		return nil, fmt.Errorf("%w: %s (%s) is in this database; ids are kept, so an archive imports once per procsvc", ErrWorkspaceExists, c.workspace.ID, c.workspace.Name)
	}
	secret, hash := auth.NewSecret()
	tx, err := client.Tx(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	w := &writer{tx: tx, checked: c, batch: v.opts.BatchSize, maxBytes: v.opts.BatchBytes}
	out, err := w.write(ctx, newLineReader(r, v.opts.MaxLineBytes), hash)
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, apperr.Map(err)
	}
	out.Secret = secret
	return out, nil
}

// writer is the import's second pass.
type writer struct {
	tx      *ent.Tx
	checked *checked
	batch   int
	// rows are the rows gathered of the current type, and bytes the
	// archive's bytes they were read from.
	rows, bytes int
	maxBytes    int
}

func (w *writer) write(ctx context.Context, lr *lineReader, tokenHash string) (*Imported, error) {
	c := w.checked
	ws := c.workspace.ID
	tx := w.tx
	var (
		members    []*ent.MemberCreate
		projects   []*ent.ProjectCreate
		categories []*ent.CategoryCreate
		procedures []*ent.ProcedureCreate
		comments   []*ent.CommentCreate
		events     []*ent.EventCreate
		webhooks   []*ent.WebhookEndpointCreate
	)
	// flushAll writes every batch gathered; a type's rows are written
	// before the next type's are read, since each refers to the earlier.
	flushAll := func() error {
		for _, f := range []struct {
			typ   string
			n     int
			write func() error
		}{
			{TypeMember, len(members), func() error { return tx.Member.CreateBulk(members...).Exec(ctx) }},
			{TypeProject, len(projects), func() error { return tx.Project.CreateBulk(projects...).Exec(ctx) }},
			{TypeCategory, len(categories), func() error { return tx.Category.CreateBulk(categories...).Exec(ctx) }},
			{TypeProcedure, len(procedures), func() error { return tx.Procedure.CreateBulk(procedures...).Exec(ctx) }},
			{TypeComment, len(comments), func() error { return tx.Comment.CreateBulk(comments...).Exec(ctx) }},
			{TypeEvent, len(events), func() error { return tx.Event.CreateBulk(events...).Exec(ctx) }},
			{TypeWebhook, len(webhooks), func() error { return tx.WebhookEndpoint.CreateBulk(webhooks...).Exec(ctx) }},
		} {
			if f.n == 0 {
				continue
			}
			if err := f.write(); err != nil {
				return &writeError{typ: f.typ, err: apperr.Map(err)}
			}
		}
		members, projects, categories, procedures = members[:0], projects[:0], categories[:0], procedures[:0]
		comments, events, webhooks = comments[:0], events[:0], webhooks[:0]
		return nil
	}
	counts := map[string]int64{}
	lastType := ""
	_, err := walk(lr, func(line int, typ string, rec any) error {
		if typ != lastType || w.rows >= w.batch || (w.rows > 0 && w.bytes+lr.last > w.maxBytes) {
			if err := flushAll(); err != nil {
				return err
			}
			w.rows, w.bytes, lastType = 0, 0, typ
		}
		w.rows++
		w.bytes += lr.last
		counts[typ]++
		switch r := rec.(type) {
		case *WorkspaceRecord:
			// The workspace first, alone: every other row refers to it.
			return tx.Workspace.Create().SetID(r.ID).SetName(r.Name).SetKey(r.Key).SetProcedureSeq(r.ProcedureSeq).
				SetVersion(r.Version).SetEventsPrunedTo(r.EventsPrunedTo).SetCreatedAt(r.CreatedAt).Exec(ctx)
		case *MemberRecord:
			members = append(members, tx.Member.Create().SetID(r.ID).SetWorkspaceID(ws).SetName(r.Name).SetEmail(r.Email).
				SetRole(member.Role(r.Role)).SetCreatedAt(r.CreatedAt).SetNillableRemovedAt(r.RemovedAt))
		case *ProjectRecord:
			projects = append(projects, tx.Project.Create().SetID(r.ID).SetWorkspaceID(ws).SetName(r.Name).
				SetNillableStartedAt(r.StartedAt).SetNillableDueAt(r.DueAt).SetCreatedAt(r.CreatedAt).SetUpdatedAt(r.UpdatedAt))
		case *CategoryRecord:
			categories = append(categories, tx.Category.Create().SetID(r.ID).SetWorkspaceID(ws).SetName(r.Name).
				SetCreatedAt(r.CreatedAt).SetUpdatedAt(r.UpdatedAt))
		case *ProcedureRecord:
			procedures = append(procedures, tx.Procedure.Create().SetID(r.ID).SetWorkspaceID(ws).SetNumber(r.Number).
				SetShortID(r.ShortID).SetName(r.Name).SetPriority(procedure.Priority(r.Priority)).SetState(procedure.State(r.State)).
				SetNillableContent(r.Content).SetNillableCategoryID(r.CategoryID).SetNillableDoerID(r.DoerID).
				SetCreatorID(r.CreatorID).SetProjectID(r.ProjectID).SetProjectName(c.projects[r.ProjectID]).
				SetPosition(r.Position).SetDueAt(r.DueAt).SetNillableCaptureID(r.CaptureID).SetDisplayVideo(r.DisplayVideo).
				SetIsFineTunedData(r.IsFineTunedData).SetCreatedAt(r.CreatedAt).SetUpdatedAt(r.UpdatedAt))
		case *CommentRecord:
			// The procedure's comment count follows from the database's
			// triggers on comments (internal/database/commentcount.go).
			comments = append(comments, tx.Comment.Create().SetID(r.ID).SetWorkspaceID(ws).SetProcedureID(r.ProcedureID).
				SetAuthorID(r.AuthorID).SetText(r.Text).SetCreatedAt(r.CreatedAt).SetUpdatedAt(r.UpdatedAt))
		case *EventRecord:
			e := tx.Event.Create().SetID(r.ID).SetWorkspaceID(ws).SetVersion(r.Version).SetKind(r.Kind).SetEntityID(r.EntityID).
				SetNillableProcedureID(r.ProcedureID).SetNillableProjectID(r.ProjectID).SetNillableActorMemberID(r.ActorMemberID).
				SetNillableActorTokenID(r.ActorTokenID).SetCreatedAt(r.CreatedAt).SetChanges(string(r.Changes))
			if len(r.Facets) > 0 && !bytes.Equal(r.Facets, []byte("null")) {
				e.SetFacets(string(r.Facets))
			}
			events = append(events, e)
		case *WebhookRecord:
			secret, err := webhookSecret()
			if err != nil {
				return err
			}
			// Disabled, with a secret nobody knows yet, its cursor at the
			// archive's version: enabling it sends only what follows.
			webhooks = append(webhooks, tx.WebhookEndpoint.Create().SetID(r.ID).SetWorkspaceID(ws).SetURL(r.URL).
				SetKinds(string(r.Kinds)).SetNillableProjectID(r.ProjectID).SetSecret(secret).SetEnabled(false).
				SetDisabledReason(ImportedWebhookReason).SetCursor(c.workspace.Version).
				SetCreatedAt(r.CreatedAt).SetUpdatedAt(r.UpdatedAt))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := flushAll(); err != nil {
		return nil, err
	}
	if !bytes.Equal(lr.sum(), c.sum) {
		return nil, errors.New("the archive changed between its validation and its import: nothing was imported")
	}
	if err := core.RebuildTallies(ctx, tx.Client(), ws); err != nil {
		return nil, apperr.Map(err)
	}
	tok, err := tx.Token.Create().SetWorkspaceID(ws).SetMemberID(c.admin.ID).SetName("import").SetSecretHash(tokenHash).Save(ctx)
	if err != nil {
		return nil, apperr.Map(err)
	}
	return &Imported{WorkspaceID: ws, Name: c.workspace.Name, Counts: counts, Admin: c.admin.ID, Email: c.admin.Email, TokenID: tok.ID}, nil
}

// webhookSecret is a fresh signing secret of core's shape (whsec_ and 32
// random bytes).
func webhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return core.WebhookSecretPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// writeError is a batch the database refused: valid as far as the archive
// goes, it clashes with what the database holds (an id of another
// workspace's record, in a forged archive).
type writeError struct {
	typ string
	err error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("the database refused the archive's %s records: %v", e.typ, e.err)
}

func (e *writeError) Unwrap() error { return e.err }
