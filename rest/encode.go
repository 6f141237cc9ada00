package rest

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/jsontext"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// The procedure shape (docs/contract.md §2.1) is what every procedure
// response and each item of GET /procedures carries. It is appended straight
// to the response body: through encoding/json a page of 50 cost about 30
// allocations per procedure (an id string per UUID, a MarshalJSON per
// timestamp) plus reflection over every field. appendProcedure writes what
// encoding/json wrote for the contract's struct, byte for byte
// (TestAppendProcedureMatchesEncodingJSON holds the two together): every
// field present, optional ones null, comments [] when there are none.
// After the contract's fields comes commentCount, how many comments the
// procedure holds, of which comments shows the newest
// limits.EmbeddedComments (docs/design.md §5).

// appendProcedure appends p with its edges as the contract's procedure,
// comments (the newest of the commentCount it holds) embedded. The error
// is encoding/json's for a position it cannot represent (NaN, ±Inf).
func appendProcedure(b []byte, p *ent.Procedure, cat *ent.Category, doer *ent.Member, proj *ent.Project, comments []*ent.Comment, commentCount int) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendUUID(b, p.ID)
	b = append(b, `,"shortId":`...)
	if p.ShortID != "" {
		b = jsontext.AppendString(b, p.ShortID)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"name":`...)
	b = jsontext.AppendString(b, p.Name)
	b = append(b, `,"priority":`...)
	b = jsontext.AppendString(b, string(p.Priority))
	b = append(b, `,"state":`...)
	b = jsontext.AppendString(b, string(p.State))
	b = append(b, `,"content":`...)
	b = appendOptString(b, p.Content)
	b = append(b, `,"categoryId":`...)
	b = appendOptUUID(b, p.CategoryID)
	b = append(b, `,"doerId":`...)
	b = appendOptUUID(b, p.DoerID)
	b = append(b, `,"creatorId":`...)
	b = appendUUID(b, p.CreatorID)
	b = append(b, `,"position":`...)
	b, err := appendFloat(b, p.Position)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"dueAt":`...)
	b = appendTime(b, p.DueAt)
	b = append(b, `,"createdAt":`...)
	b = appendTime(b, p.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = appendTime(b, p.UpdatedAt)
	b = append(b, `,"projectId":`...)
	b = appendUUID(b, p.ProjectID)
	b = append(b, `,"workspaceId":`...)
	b = appendUUID(b, p.WorkspaceID)
	b = append(b, `,"captureId":`...)
	b = appendOptString(b, p.CaptureID)
	b = append(b, `,"displayVideo":`...)
	b = strconv.AppendBool(b, p.DisplayVideo)
	b = append(b, `,"isFineTunedData":`...)
	b = strconv.AppendBool(b, p.IsFineTunedData)
	b = append(b, `,"category":`...)
	if cat != nil {
		b = append(appendRef(b, cat.ID, cat.Name), '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"doer":`...)
	if doer != nil {
		b = appendRef(b, doer.ID, doer.Name)
		b = append(b, `,"email":`...)
		b = jsontext.AppendString(b, doer.Email)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"project":`...)
	if proj != nil {
		b = append(appendRef(b, proj.ID, proj.Name), '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"comments":[`...)
	for i, c := range comments {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendUUID(b, c.ID)
		b = append(b, `,"text":`...)
		b = jsontext.AppendString(b, c.Text)
		b = append(b, `,"createdAt":`...)
		b = appendTime(b, c.CreatedAt)
		b = append(b, '}')
	}
	b = append(b, `],"commentCount":`...)
	b = strconv.AppendInt(b, int64(commentCount), 10)
	return append(b, '}'), nil
}

// appendRef appends the start of an embedded record, {"id":…,"name":…,
// left open for more fields.
func appendRef(b []byte, id uuid.UUID, name string) []byte {
	b = append(b, `{"id":`...)
	b = appendUUID(b, id)
	b = append(b, `,"name":`...)
	return jsontext.AppendString(b, name)
}

// appendUUID appends id as a JSON string in its canonical form.
func appendUUID(b []byte, id uuid.UUID) []byte {
	b = append(b, '"')
	return append(ids.AppendText(b, id), '"')
}

func appendOptUUID(b []byte, id *uuid.UUID) []byte {
	if id == nil {
		return append(b, "null"...)
	}
	return appendUUID(b, *id)
}

// appendTime appends t as a JSON string in timefmt's layout, as Time does.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = timefmt.AppendFormat(b, t)
	return append(b, '"')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsontext.AppendString(b, *s)
}

// appendFloat appends f as encoding/json does: ES6 number formatting,
// exponents from 1e21 and below 1e-6.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(f)
		return nil, err
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}
