package rest

import (
	"strconv"
	"time"

	"github.com/google/uuid"

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

func idPtr(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := id.String()
	return &s
}

// Procedure is docs/contract.md §2.1's procedure: every field present,
// optional ones null.
type Procedure struct {
	ID              string       `json:"id"`
	ShortID         *string      `json:"shortId"`
	Name            string       `json:"name"`
	Priority        string       `json:"priority"`
	State           string       `json:"state"`
	Content         *string      `json:"content"`
	CategoryID      *string      `json:"categoryId"`
	DoerID          *string      `json:"doerId"`
	CreatorID       string       `json:"creatorId"`
	Position        float64      `json:"position"`
	DueAt           Time         `json:"dueAt"`
	CreatedAt       Time         `json:"createdAt"`
	UpdatedAt       Time         `json:"updatedAt"`
	ProjectID       string       `json:"projectId"`
	WorkspaceID     string       `json:"workspaceId"`
	CaptureID       *string      `json:"captureId"`
	DisplayVideo    bool         `json:"displayVideo"`
	IsFineTunedData bool         `json:"isFineTunedData"`
	Category        *CategoryRef `json:"category"`
	Doer            *DoerRef     `json:"doer"`
	Project         *ProjectRef  `json:"project"`
	Comments        []CommentRef `json:"comments"`
}

// CategoryRef is a procedure's embedded category.
type CategoryRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// DoerRef is a procedure's embedded responsible member.
type DoerRef struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// ProjectRef is a procedure's embedded project.
type ProjectRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// CommentRef is a procedure's embedded comment.
type CommentRef struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	CreatedAt Time   `json:"createdAt"`
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

func procedureShape(p *ent.Procedure, cat *ent.Category, doer *ent.Member, proj *ent.Project, comments []*ent.Comment) Procedure {
	out := Procedure{
		ID: p.ID.String(), Name: p.Name, Priority: string(p.Priority), State: string(p.State),
		Content: p.Content, CategoryID: idPtr(p.CategoryID), DoerID: idPtr(p.DoerID),
		CreatorID: p.CreatorID.String(), Position: p.Position, DueAt: Time(p.DueAt),
		CreatedAt: Time(p.CreatedAt), UpdatedAt: Time(p.UpdatedAt), ProjectID: p.ProjectID.String(),
		WorkspaceID: p.WorkspaceID.String(), CaptureID: p.CaptureID, DisplayVideo: p.DisplayVideo,
		IsFineTunedData: p.IsFineTunedData, Comments: make([]CommentRef, len(comments)),
	}
	if p.ShortID != "" {
		s := p.ShortID
		out.ShortID = &s
	}
	if cat != nil {
		out.Category = &CategoryRef{ID: cat.ID.String(), Name: cat.Name}
	}
	if doer != nil {
		out.Doer = &DoerRef{ID: doer.ID.String(), Name: doer.Name, Email: doer.Email}
	}
	if proj != nil {
		out.Project = &ProjectRef{ID: proj.ID.String(), Name: proj.Name}
	}
	for i, c := range comments {
		out.Comments[i] = CommentRef{ID: c.ID.String(), Text: c.Text, CreatedAt: Time(c.CreatedAt)}
	}
	return out
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

// itoa is strconv.Itoa, named for the query-string code that uses it.
var itoa = strconv.Itoa
