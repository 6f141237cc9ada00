package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/limits"
)

// walk reads an archive from r: the header, then each record decoded into
// its type's struct and handed to visit, then the trailer, whose counts
// must be the records'. It checks what any reader must (the format and
// version, each line one JSON object of a known type with exactly its
// fields, the types' order, one workspace record first, nothing after the
// trailer) and leaves the records' contents to visit.
func walk(lr *lineReader, visit func(line int, typ string, rec any) error) (*Header, error) {
	raw, err := lr.next()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the archive is empty")
	}
	if err != nil {
		return nil, err
	}
	var h Header
	if err := strictJSON(raw, &h); err != nil {
		return nil, fmt.Errorf("line 1: not an archive header: %v", err)
	}
	if h.Format != Format {
		return nil, fmt.Errorf("line 1: format %q is not %q: not a procsvc workspace archive", h.Format, Format)
	}
	if h.Version != Version {
		return nil, fmt.Errorf("line 1: archive version %d: this procsvc reads version %d only", h.Version, Version)
	}
	counts := map[string]int64{}
	last := -1
	for {
		raw, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the archive ends at line %d without its trailer: it was cut short", lr.n)
		}
		if err != nil {
			return nil, err
		}
		line := lr.n
		var typed struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &typed); err != nil {
			if lr.partial {
				return nil, fmt.Errorf("the archive ends in the middle of line %d: it was cut short", line)
			}
			return nil, fmt.Errorf("line %d: not a JSON object: %v", line, err)
		}
		if typed.Type == TypeTrailer {
			var t Trailer
			if err := strictJSON(raw, &t); err != nil {
				return nil, fmt.Errorf("line %d: trailer: %v", line, err)
			}
			for typ := range t.Counts {
				if rank(typ) < 0 {
					return nil, fmt.Errorf("line %d: trailer counts an unknown type %q", line, typ)
				}
			}
			for _, typ := range Types {
				if t.Counts[typ] != counts[typ] {
					return nil, fmt.Errorf("line %d: the trailer counts %d %s records, the archive holds %d: it was cut or edited", line, t.Counts[typ], typ, counts[typ])
				}
			}
			if extra, err := lr.next(); err == nil {
				_ = extra
				return nil, fmt.Errorf("line %d: a line after the trailer", lr.n)
			} else if !errors.Is(err, io.EOF) {
				return nil, err
			}
			return &h, nil
		}
		r := rank(typed.Type)
		switch {
		case typed.Type == "":
			return nil, fmt.Errorf("line %d: a record without a type", line)
		case r < 0:
			return nil, fmt.Errorf("line %d: unknown record type %q", line, typed.Type)
		case r < last:
			return nil, fmt.Errorf("line %d: a %s record after %s records: records come in the order %s", line, typed.Type, Types[last], strings.Join(Types, ", "))
		case last < 0 && typed.Type != TypeWorkspace:
			return nil, fmt.Errorf("line %d: the first record is a %s, not the workspace", line, typed.Type)
		case typed.Type == TypeWorkspace && counts[TypeWorkspace] > 0:
			return nil, fmt.Errorf("line %d: a second workspace record: an archive holds one workspace", line)
		}
		last = r
		rec := newRecord(typed.Type)
		if err := strictJSON(raw, rec); err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", line, typed.Type, err)
		}
		if err := visit(line, typed.Type, rec); err != nil {
			if we := (*writeError)(nil); errors.As(err, &we) {
				return nil, err
			}
			return nil, fmt.Errorf("line %d: %s: %w", line, typed.Type, err)
		}
		counts[typed.Type]++
	}
}

// newRecord returns a pointer to a zero record of typ.
func newRecord(typ string) any {
	switch typ {
	case TypeWorkspace:
		return &WorkspaceRecord{}
	case TypeMember:
		return &MemberRecord{}
	case TypeProject:
		return &ProjectRecord{}
	case TypeCategory:
		return &CategoryRecord{}
	case TypeProcedure:
		return &ProcedureRecord{}
	case TypeComment:
		return &CommentRecord{}
	case TypeEvent:
		return &EventRecord{}
	case TypeWebhook:
		return &WebhookRecord{}
	}
	panic("archive: no record type " + typ)
}

// strictJSON decodes one JSON object holding only v's fields.
func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// checked is what the first pass learned: the ids later records refer to,
// and who gets the imported workspace's token.
type checked struct {
	header    *Header
	workspace WorkspaceRecord
	members   map[uuid.UUID]struct{}
	// projects holds each project's name: a procedure's copy of it is
	// derived on import.
	projects   map[uuid.UUID]string
	categories map[uuid.UUID]struct{}
	procedures map[uuid.UUID]struct{}
	// admin is the earliest-created active ADMIN: the imported
	// workspace's token is theirs.
	admin     *MemberRecord
	lastEvent int64
	// privateWebhooks: webhook URLs may name private hosts
	// (ImportOptions.WebhookAllowPrivateAddresses).
	privateWebhooks bool
	sum             []byte
}

// validate is the import's first pass: every line of the archive checked,
// nothing written. Its memory is a line and the ids of the workspace's
// members, projects (with their names), categories and procedures, about
// 60 bytes each.
func validate(lr *lineReader, privateWebhooks bool) (*checked, error) {
	c := &checked{members: map[uuid.UUID]struct{}{}, projects: map[uuid.UUID]string{},
		categories: map[uuid.UUID]struct{}{}, procedures: map[uuid.UUID]struct{}{}, privateWebhooks: privateWebhooks}
	h, err := walk(lr, c.check)
	if err != nil {
		return nil, err
	}
	if h.WorkspaceID != c.workspace.ID {
		return nil, fmt.Errorf("line 1: the header names workspace %s, the archive holds %s", h.WorkspaceID, c.workspace.ID)
	}
	if h.WorkspaceVersion != c.workspace.Version {
		return nil, fmt.Errorf("line 1: the header's workspaceVersion %d is not the workspace record's version %d", h.WorkspaceVersion, c.workspace.Version)
	}
	if c.admin == nil {
		return nil, errors.New("the archive has no active ADMIN member: nobody could be given the imported workspace's token")
	}
	c.header, c.sum = h, lr.sum()
	return c, nil
}

// check validates one record and remembers what later ones may refer to.
func (c *checked) check(_ int, typ string, rec any) error {
	switch r := rec.(type) {
	case *WorkspaceRecord:
		if err := all(id(ids.KindWorkspace, "id", r.ID), title("name", r.Name, limits.Title), at("createdAt", r.CreatedAt)); err != nil {
			return err
		}
		if !limits.WorkspaceKey.MatchString(r.Key) {
			return fmt.Errorf("key %q must be 2 to 10 letters A–Z", r.Key)
		}
		if r.ProcedureSeq < 0 || r.Version < 0 || r.EventsPrunedTo < 0 || r.EventsPrunedTo > r.Version {
			return errors.New("procedureSeq, version and eventsPrunedTo must be at least 0, and eventsPrunedTo at most version")
		}
		c.workspace = *r
	case *MemberRecord:
		if err := all(id(ids.KindMember, "id", r.ID), title("name", r.Name, limits.Title), title("email", r.Email, limits.Email),
			at("createdAt", r.CreatedAt), unique(c.members, r.ID)); err != nil {
			return err
		}
		// Not required lower-case, though the core stores it so: rows
		// loaded past the core (procsvc-bench seed) keep their case, and
		// the archive carries what the database holds.
		if !strings.Contains(r.Email, "@") {
			return fmt.Errorf("email %q is not an address", r.Email)
		}
		if member.RoleValidator(member.Role(r.Role)) != nil {
			return fmt.Errorf("role %q is not ADMIN, MEMBER or VIEWER", r.Role)
		}
		c.members[r.ID] = struct{}{}
		if r.Role == string(member.RoleADMIN) && r.RemovedAt == nil &&
			(c.admin == nil || r.CreatedAt.Before(c.admin.CreatedAt)) {
			m := *r
			c.admin = &m
		}
	case *ProjectRecord:
		if err := all(id(ids.KindProject, "id", r.ID), title("name", r.Name, limits.Title), at("createdAt", r.CreatedAt),
			at("updatedAt", r.UpdatedAt)); err != nil {
			return err
		}
		if _, dup := c.projects[r.ID]; dup {
			return fmt.Errorf("id %s appears twice", r.ID)
		}
		c.projects[r.ID] = r.Name
	case *CategoryRecord:
		if err := all(id(ids.KindCategory, "id", r.ID), title("name", r.Name, limits.Title), at("createdAt", r.CreatedAt),
			at("updatedAt", r.UpdatedAt), unique(c.categories, r.ID)); err != nil {
			return err
		}
		c.categories[r.ID] = struct{}{}
	case *ProcedureRecord:
		if err := all(id(ids.KindProcedure, "id", r.ID), title("name", r.Name, limits.Name), at("createdAt", r.CreatedAt),
			at("updatedAt", r.UpdatedAt), at("dueAt", r.DueAt), unique(c.procedures, r.ID),
			refers(c.members, "creatorId", "member", &r.CreatorID), refers(c.members, "doerId", "member", r.DoerID),
			refers(c.categories, "categoryId", "category", r.CategoryID)); err != nil {
			return err
		}
		if _, ok := c.projects[r.ProjectID]; !ok {
			return fmt.Errorf("%s: projectId %s names no project of the archive", r.ID, r.ProjectID)
		}
		if procedure.PriorityValidator(procedure.Priority(r.Priority)) != nil {
			return fmt.Errorf("%s: priority %q is not LOW, MEDIUM or HIGH", r.ID, r.Priority)
		}
		if procedure.StateValidator(procedure.State(r.State)) != nil {
			return fmt.Errorf("%s: state %q is not TODO, IN_PROGRESS, COMPLETED or WAITING", r.ID, r.State)
		}
		if r.Number < 1 || r.Number > c.workspace.ProcedureSeq || !limits.ShortID.MatchString(r.ShortID) {
			return fmt.Errorf("%s: number %d and shortId %q must be a number the workspace handed out (1 to %d) and its shortId", r.ID, r.Number, r.ShortID, c.workspace.ProcedureSeq)
		}
		if r.Content != nil && utf8.RuneCountInString(*r.Content) > limits.Content {
			return fmt.Errorf("%s: content is longer than %d characters", r.ID, limits.Content)
		}
		if r.CaptureID != nil && utf8.RuneCountInString(*r.CaptureID) > limits.Title {
			return fmt.Errorf("%s: captureId is longer than %d characters", r.ID, limits.Title)
		}
		c.procedures[r.ID] = struct{}{}
	case *CommentRecord:
		if err := all(id(ids.KindComment, "id", r.ID), title("text", r.Text, limits.Comment), at("createdAt", r.CreatedAt),
			at("updatedAt", r.UpdatedAt), refers(c.procedures, "procedureId", "procedure", &r.ProcedureID),
			refers(c.members, "authorId", "member", &r.AuthorID)); err != nil {
			return err
		}
	case *EventRecord:
		if err := all(id(ids.KindEvent, "id", r.ID), at("createdAt", r.CreatedAt)); err != nil {
			return err
		}
		if r.Kind == "" || len(r.Kind) > 100 {
			return errors.New("kind must be 1 to 100 characters")
		}
		if r.Version <= c.lastEvent || r.Version > c.workspace.Version {
			return fmt.Errorf("version %d: events come in increasing versions, each at most the workspace's %d", r.Version, c.workspace.Version)
		}
		c.lastEvent = r.Version
		var changes []json.RawMessage
		if err := json.Unmarshal(r.Changes, &changes); err != nil || changes == nil {
			return errors.New("changes must be a JSON array")
		}
		if len(r.Facets) > 0 && !json.Valid(r.Facets) {
			return errors.New("facets must be JSON or null")
		}
	case *WebhookRecord:
		if err := all(id(ids.KindWebhook, "id", r.ID), at("createdAt", r.CreatedAt), at("updatedAt", r.UpdatedAt)); err != nil {
			return err
		}
		// Registration's own rule (no credentials in the URL, no private
		// host unless the server allows them): an archive is another
		// procsvc's word, not this one's.
		if err := core.CheckWebhookURL(r.URL, c.privateWebhooks); err != nil {
			// Not the URL itself: it may hold a password.
			return fmt.Errorf("%v", err)
		}
		var kinds []string
		if err := json.Unmarshal(r.Kinds, &kinds); err != nil || kinds == nil {
			return errors.New("kinds must be a JSON array of strings")
		}
		if r.ProjectID != nil {
			if _, ok := c.projects[*r.ProjectID]; !ok {
				return fmt.Errorf("projectId %s names no project of the archive", *r.ProjectID)
			}
		}
	}
	return nil
}

// all returns the first error of errs.
func all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// id checks that v is an id of kind.
func id(kind ids.Kind, field string, v uuid.UUID) error {
	if ids.KindOf(v) != kind {
		return fmt.Errorf("%s %s is not an id of this record's kind", field, v)
	}
	return nil
}

// title checks a required text of at most max characters.
func title(field, v string, max int) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if utf8.RuneCountInString(v) > max {
		return fmt.Errorf("%s is longer than %d characters", field, max)
	}
	return nil
}

// at checks a required timestamp.
func at(field string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%s is missing", field)
	}
	return nil
}

// unique checks that id was not seen before.
func unique(seen map[uuid.UUID]struct{}, id uuid.UUID) error {
	if _, dup := seen[id]; dup {
		return fmt.Errorf("id %s appears twice", id)
	}
	return nil
}

// refers checks that an optional reference names a record seen before.
func refers(seen map[uuid.UUID]struct{}, field, what string, id *uuid.UUID) error {
	if id == nil {
		return nil
	}
	if _, ok := seen[*id]; !ok {
		return fmt.Errorf("%s %s names no %s of the archive", field, *id, what)
	}
	return nil
}
