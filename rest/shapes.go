package rest

import (
	"strconv"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// Time renders as docs/contract.md's YYYY-MM-DDTHH:mm:ss.sssZ.
type Time time.Time

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timefmt.Layout)+2)
	b = append(b, '"')
	b = timefmt.AppendFormat(b, time.Time(t))
	return append(b, '"'), nil
}

func timePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}

// Comment is a comment as returned by POST /procedures/{id}/comments.
type Comment struct {
	ID          string `json:"id"`
	ProcedureID string `json:"procedureId"`
	AuthorID    string `json:"authorId"`
	Text        string `json:"text"`
	CreatedAt   Time   `json:"createdAt"`
	UpdatedAt   Time   `json:"updatedAt"`
}

// EmbeddedComment is a comment as a procedure embeds it (encode.go writes
// that array by hand) and as GET /procedures/{id}/comments lists it, so that
// a client reading past the embedded newest ones gets items of one shape.
type EmbeddedComment struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	CreatedAt Time   `json:"createdAt"`
}

// Project is docs/contract.md §2.2's project.
type Project struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	WorkspaceID string `json:"workspaceId"`
	StartedAt   *Time  `json:"startedAt"`
	DueAt       *Time  `json:"dueAt"`
	CreatedAt   Time   `json:"createdAt"`
	UpdatedAt   Time   `json:"updatedAt"`
}

// Category is docs/contract.md §2.3's category.
type Category struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	WorkspaceID string `json:"workspaceId"`
	CreatedAt   Time   `json:"createdAt"`
	UpdatedAt   Time   `json:"updatedAt"`
}

// Member is docs/contract.md §2.4's member.
type Member struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Email       string `json:"email"`
	Role        string `json:"role"`
	WorkspaceID string `json:"workspaceId"`
	CreatedAt   Time   `json:"createdAt"`
}

// List is docs/contract.md §2.5's envelope.
type List[T any] struct {
	Data []T  `json:"data"`
	Meta Meta `json:"meta"`
}

// Meta carries a list's total.
type Meta struct {
	Total int `json:"total"`
}

// Deleted is the body of every successful DELETE.
type Deleted struct {
	Success bool `json:"success"`
}

func projectShape(p *ent.Project) Project {
	return Project{ID: p.ID.String(), Name: p.Name, WorkspaceID: p.WorkspaceID.String(),
		StartedAt: timePtr(p.StartedAt), DueAt: timePtr(p.DueAt), CreatedAt: Time(p.CreatedAt), UpdatedAt: Time(p.UpdatedAt)}
}

func categoryShape(c *ent.Category) Category {
	return Category{ID: c.ID.String(), Name: c.Name, WorkspaceID: c.WorkspaceID.String(),
		CreatedAt: Time(c.CreatedAt), UpdatedAt: Time(c.UpdatedAt)}
}

func memberShape(m *ent.Member) Member {
	return Member{ID: m.ID.String(), Name: m.Name, Email: m.Email, Role: string(m.Role),
		WorkspaceID: m.WorkspaceID.String(), CreatedAt: Time(m.CreatedAt)}
}

func commentShape(c *ent.Comment) Comment {
	return Comment{ID: c.ID.String(), ProcedureID: c.ProcedureID.String(), AuthorID: c.AuthorID.String(),
		Text: c.Text, CreatedAt: Time(c.CreatedAt), UpdatedAt: Time(c.UpdatedAt)}
}

func embeddedCommentShape(c *ent.Comment) EmbeddedComment {
	return EmbeddedComment{ID: c.ID.String(), Text: c.Text, CreatedAt: Time(c.CreatedAt)}
}

// itoa is strconv.Itoa, named for the query-string code that uses it.
var itoa = strconv.Itoa
