package rest

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/procedure"
)

// contractProcedure is docs/contract.md §2.1's procedure as a struct for
// encoding/json: the reference appendProcedure must reproduce byte for byte.
type contractProcedure struct {
	ID              string  `json:"id"`
	ShortID         *string `json:"shortId"`
	Name            string  `json:"name"`
	Priority        string  `json:"priority"`
	State           string  `json:"state"`
	Content         *string `json:"content"`
	CategoryID      *string `json:"categoryId"`
	DoerID          *string `json:"doerId"`
	CreatorID       string  `json:"creatorId"`
	Position        float64 `json:"position"`
	DueAt           Time    `json:"dueAt"`
	CreatedAt       Time    `json:"createdAt"`
	UpdatedAt       Time    `json:"updatedAt"`
	ProjectID       string  `json:"projectId"`
	WorkspaceID     string  `json:"workspaceId"`
	CaptureID       *string `json:"captureId"`
	DisplayVideo    bool    `json:"displayVideo"`
	IsFineTunedData bool    `json:"isFineTunedData"`
	Category        *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"category"`
	Doer *struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"doer"`
	Project *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"project"`
	Comments []contractComment `json:"comments"`
	// CommentCount follows the contract's fields (docs/design.md §5).
	CommentCount int `json:"commentCount"`
}

type contractComment struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	CreatedAt Time   `json:"createdAt"`
}

func contractShape(p *ent.Procedure, cat *ent.Category, doer *ent.Member, proj *ent.Project, comments []*ent.Comment, commentCount int) contractProcedure {
	idPtr := func(id *uuid.UUID) *string {
		if id == nil {
			return nil
		}
		s := id.String()
		return &s
	}
	out := contractProcedure{
		ID: p.ID.String(), Name: p.Name, Priority: string(p.Priority), State: string(p.State),
		Content: p.Content, CategoryID: idPtr(p.CategoryID), DoerID: idPtr(p.DoerID),
		CreatorID: p.CreatorID.String(), Position: p.Position, DueAt: Time(p.DueAt),
		CreatedAt: Time(p.CreatedAt), UpdatedAt: Time(p.UpdatedAt), ProjectID: p.ProjectID.String(),
		WorkspaceID: p.WorkspaceID.String(), CaptureID: p.CaptureID, DisplayVideo: p.DisplayVideo,
		IsFineTunedData: p.IsFineTunedData, Comments: make([]contractComment, len(comments)), CommentCount: commentCount,
	}
	if p.ShortID != "" {
		out.ShortID = &p.ShortID
	}
	if cat != nil {
		out.Category = &struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}{cat.ID.String(), cat.Name}
	}
	if doer != nil {
		out.Doer = &struct {
			ID    string `json:"id"`
			Name  string `json:"name"`
			Email string `json:"email"`
		}{doer.ID.String(), doer.Name, doer.Email}
	}
	if proj != nil {
		out.Project = &struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}{proj.ID.String(), proj.Name}
	}
	for i, c := range comments {
		out.Comments[i] = contractComment{ID: c.ID.String(), Text: c.Text, CreatedAt: Time(c.CreatedAt)}
	}
	return out
}

// encodeLikeWriteJSON is what middleware.WriteJSON writes for v, without its
// trailing newline.
func encodeLikeWriteJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// hostileText exercises every escaping rule of encoding/json's strings.
const hostileText = "quote \" backslash \\ <html> & 'apos' \b\f\n\r\t \x00\x01\x1f \x7f é 日本 😀 \u2028 \u2029 bad \xff\xfe end"

func TestAppendProcedureMatchesEncodingJSON(t *testing.T) {
	content, capture := "some *markdown*\n", "cap-1"
	catID, doerID := uuid.New(), uuid.New()
	at := time.Date(2026, 1, 2, 15, 4, 5, 678_901_000, time.UTC)
	full := &ent.Procedure{
		ID: uuid.New(), ShortID: "ACME-12", Name: hostileText, Priority: procedure.PriorityHIGH,
		State: procedure.StateIN_PROGRESS, Content: &content, CategoryID: &catID, DoerID: &doerID,
		CreatorID: uuid.New(), Position: 1.5, DueAt: at, CreatedAt: at.Add(-time.Hour), UpdatedAt: at.Add(time.Minute),
		ProjectID: uuid.New(), WorkspaceID: uuid.New(), CaptureID: &capture, DisplayVideo: true, IsFineTunedData: true,
	}
	bare := &ent.Procedure{ID: uuid.New(), Name: "Bare", Priority: procedure.PriorityLOW, State: procedure.StateTODO,
		CreatorID: uuid.New(), DueAt: at, CreatedAt: at, UpdatedAt: at, ProjectID: uuid.New(), WorkspaceID: uuid.New()}
	cat := &ent.Category{ID: catID, Name: "Cat \"one\""}
	doer := &ent.Member{ID: doerID, Name: "Ana <ana>", Email: "ana@example.com"}
	proj := &ent.Project{ID: uuid.New(), Name: "Launch & land"}
	comments := []*ent.Comment{
		{ID: uuid.New(), Text: hostileText, CreatedAt: at},
		{ID: uuid.New(), Text: "", CreatedAt: at.Add(time.Second)},
	}
	withPosition := func(p *ent.Procedure, pos float64) *ent.Procedure {
		c := *p
		c.Position = pos
		return &c
	}
	cases := []struct {
		name     string
		p        *ent.Procedure
		cat      *ent.Category
		doer     *ent.Member
		proj     *ent.Project
		comments []*ent.Comment
		count    int
	}{
		{"EveryField", full, cat, doer, proj, comments, 2},
		{"NoOptionalFields", bare, nil, nil, nil, nil, 0},
		{"NoComments", full, cat, doer, proj, []*ent.Comment{}, 0},
		{"MoreThanEmbedded", full, cat, doer, proj, comments, 10_000},
		{"NegativePosition", withPosition(bare, -1024.25), nil, nil, proj, nil, 0},
		{"TinyPosition", withPosition(bare, 1e-7), nil, nil, proj, nil, 0},
		{"HugePosition", withPosition(bare, 3e21), nil, nil, proj, nil, 0},
		{"NegativeTinyPosition", withPosition(bare, -2.5e-10), nil, nil, proj, nil, 0},
		{"LongFraction", withPosition(bare, 0.1+0.2), nil, nil, proj, nil, 0},
		{"ZeroTime", &ent.Procedure{ID: uuid.New(), CreatorID: uuid.New()}, nil, nil, nil, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := encodeLikeWriteJSON(t, contractShape(tc.p, tc.cat, tc.doer, tc.proj, tc.comments, tc.count))
			got, err := appendProcedure(nil, tc.p, tc.cat, tc.doer, tc.proj, tc.comments, tc.count)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("appendProcedure wrote\n%s\nencoding/json writes\n%s", got, want)
			}
		})
	}
}

func TestAppendProcedureRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, pos := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := appendProcedure(nil, &ent.Procedure{Position: pos}, nil, nil, nil, nil, 0); err == nil {
			t.Errorf("position %v: no error", pos)
		}
	}
}
