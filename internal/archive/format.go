// Package archive exports one workspace as a versioned JSON Lines archive
// and imports such an archive into another procsvc (docs/archive-format.md
// is the format; docs/operations.md, "Workspace export and import", the
// commands and their guarantees).
//
// The export streams: it reads the workspace in keyset pages inside one
// read-only transaction (one snapshot, at one workspace version) and writes
// each page before it reads the next, so its memory is a page whatever the
// workspace's size, and a reader that stops reading stops it. The import
// reads the file twice: a first pass validates every line (and holds only
// the ids later lines refer to), a second writes it in batches inside one
// transaction, so that a refused archive writes nothing and a failure
// half-way leaves nothing behind.
//
// Files: format.go the records; export.go the export; lines.go the bounded
// line reader; validate.go the first pass; import.go the second; http.go the
// API's download.
package archive

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Format is the header's "format": what the file is.
const Format = "procsvc.workspace"

// Version is the archive version this procsvc writes and the only one it
// reads. A change of the records that an older reader would misread bumps it.
const Version = 1

// MaxLineBytes bounds one line of an archive, newline excluded: the import
// refuses a longer line without reading it into memory, and the export
// refuses to write one. The largest record procsvc can write is an event
// that changed a procedure's content (limits.Content, 200 000 characters)
// from one maximal text to another: each character JSON-escaped takes at
// most 6 bytes, so 2 × 1.2 MB plus the event's other fields; 4 MiB holds it.
const MaxLineBytes = 4 << 20

// The record types, in the order an archive holds them: each record refers
// only to records of earlier types (docs/archive-format.md, "Order").
const (
	TypeWorkspace = "workspace"
	TypeMember    = "member"
	TypeProject   = "project"
	TypeCategory  = "category"
	TypeProcedure = "procedure"
	TypeComment   = "comment"
	TypeEvent     = "event"
	TypeWebhook   = "webhook"
	TypeTrailer   = "trailer"
)

// Types are the record types of an archive's body, in order.
var Types = []string{TypeWorkspace, TypeMember, TypeProject, TypeCategory, TypeProcedure, TypeComment, TypeEvent, TypeWebhook}

// rank is a body type's place in Types, or -1.
func rank(typ string) int {
	for i, t := range Types {
		if t == typ {
			return i
		}
	}
	return -1
}

// Header is an archive's first line.
type Header struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	ExportedAt  time.Time `json:"exportedAt"`
	WorkspaceID uuid.UUID `json:"workspaceId"`
	// WorkspaceVersion is the workspace's version the snapshot was read
	// at: every record of the archive is as of that version.
	WorkspaceVersion int64 `json:"workspaceVersion"`
}

// Trailer is an archive's last line: how many records of each type came
// before it. An archive without it, or whose counts differ from its lines,
// was cut short or edited, and is refused.
type Trailer struct {
	Type   string           `json:"type"`
	Counts map[string]int64 `json:"counts"`
}

// WorkspaceRecord is the workspace itself: the archive's first record.
type WorkspaceRecord struct {
	Type           string    `json:"type"`
	ID             uuid.UUID `json:"id"`
	Name           string    `json:"name"`
	Key            string    `json:"key"`
	ProcedureSeq   int64     `json:"procedureSeq"`
	Version        int64     `json:"version"`
	EventsPrunedTo int64     `json:"eventsPrunedTo"`
	CreatedAt      time.Time `json:"createdAt"`
}

// MemberRecord is a member, removed ones included (their comments and
// history name them). Its link to an identity provider's person, and the
// person an admin unlinked from it, are not exported (docs/archive-format.md).
type MemberRecord struct {
	Type      string     `json:"type"`
	ID        uuid.UUID  `json:"id"`
	Name      string     `json:"name"`
	Email     string     `json:"email"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"createdAt"`
	RemovedAt *time.Time `json:"removedAt"`
}

// ProjectRecord is a project.
type ProjectRecord struct {
	Type      string     `json:"type"`
	ID        uuid.UUID  `json:"id"`
	Name      string     `json:"name"`
	StartedAt *time.Time `json:"startedAt"`
	DueAt     *time.Time `json:"dueAt"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// CategoryRecord is a category.
type CategoryRecord struct {
	Type      string    `json:"type"`
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ProcedureRecord is a procedure. Its project's name and its comment count
// are not in it: the import derives both (from the project record and from
// the comment records), so that they cannot disagree with them.
type ProcedureRecord struct {
	Type            string     `json:"type"`
	ID              uuid.UUID  `json:"id"`
	Number          int64      `json:"number"`
	ShortID         string     `json:"shortId"`
	Name            string     `json:"name"`
	Priority        string     `json:"priority"`
	State           string     `json:"state"`
	Content         *string    `json:"content"`
	CategoryID      *uuid.UUID `json:"categoryId"`
	DoerID          *uuid.UUID `json:"doerId"`
	CreatorID       uuid.UUID  `json:"creatorId"`
	ProjectID       uuid.UUID  `json:"projectId"`
	Position        float64    `json:"position"`
	DueAt           time.Time  `json:"dueAt"`
	CaptureID       *string    `json:"captureId"`
	DisplayVideo    bool       `json:"displayVideo"`
	IsFineTunedData bool       `json:"isFineTunedData"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
}

// CommentRecord is a comment on a procedure.
type CommentRecord struct {
	Type        string    `json:"type"`
	ID          uuid.UUID `json:"id"`
	ProcedureID uuid.UUID `json:"procedureId"`
	AuthorID    uuid.UUID `json:"authorId"`
	Text        string    `json:"text"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// EventRecord is an entry of the change log that retention has kept: the
// history pages and the events list read them. Its ids name records as
// they were when it was written, deleted ones included, so they are not
// required to resolve; the token id names a token of the exporting
// procsvc, which the archive does not hold (tokens are never exported).
type EventRecord struct {
	Type          string          `json:"type"`
	ID            uuid.UUID       `json:"id"`
	Version       int64           `json:"version"`
	Kind          string          `json:"kind"`
	EntityID      uuid.UUID       `json:"entityId"`
	ProcedureID   *uuid.UUID      `json:"procedureId"`
	ProjectID     *uuid.UUID      `json:"projectId"`
	ActorMemberID *uuid.UUID      `json:"actorMemberId"`
	ActorTokenID  *uuid.UUID      `json:"actorTokenId"`
	CreatedAt     time.Time       `json:"createdAt"`
	Changes       json.RawMessage `json:"changes"`
	Facets        json.RawMessage `json:"facets"`
}

// WebhookRecord is a webhook endpoint without its signing secret, which is
// never exported: the import creates it disabled, with a fresh secret, for
// an admin to rotate (and so learn) and then enable.
type WebhookRecord struct {
	Type      string          `json:"type"`
	ID        uuid.UUID       `json:"id"`
	URL       string          `json:"url"`
	Kinds     json.RawMessage `json:"kinds"`
	ProjectID *uuid.UUID      `json:"projectId"`
	Enabled   bool            `json:"enabled"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// ImportedWebhookReason is the disabledReason of an imported endpoint.
const ImportedWebhookReason = "imported: rotate its secret, then enable it"
