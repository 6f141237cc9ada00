package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
)

// seeded is a workspace with something of every record type an archive
// holds: projects, categories, members of each role (one removed),
// procedures in every state with comments, updates (history), a deleted
// procedure, and a webhook endpoint.
type seeded struct {
	*apitest.Workspace
	// Procedures are the ids of the procedures that remain.
	Procedures []string
	// Busy is a procedure with comments and several updates.
	Busy string
	// Deleted is a procedure deleted after its updates: its history
	// remains.
	Deleted string
	// WebhookSecret is the endpoint's signing secret: never exported.
	WebhookSecret string
}

// seed fills s's workspace w (apitest.NewWorkspace) through the core, as an
// admin, and through REST as its member, so that the log holds both.
func seed(t *testing.T, s *apitest.Server, w *apitest.Workspace, procedures int) *seeded {
	t.Helper()
	ctx, err := s.Service.ActAsAdmin(context.Background(), w.ID)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	out := &seeded{Workspace: w}
	p2, err := s.Service.CreateProject(ctx, core.ProjectInput{Name: core.Some("Second project")})
	must(err)
	c2, err := s.Service.CreateCategory(ctx, "Second category")
	must(err)
	gone, err := s.Service.AddMember(ctx, core.MemberInput{Name: core.Some("Gone Member"), Email: core.Some("gone@" + w.ID[:8] + ".example"), Role: core.Some("MEMBER")})
	must(err)
	states := []string{"TODO", "IN_PROGRESS", "COMPLETED", "WAITING"}
	priorities := []string{"LOW", "MEDIUM", "HIGH"}
	due := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range procedures {
		in := core.CreateProcedureInput{Name: fmt.Sprintf("Procedure %02d — ünïcode", i), Priority: priorities[i%3], State: states[i%4],
			DueAt: &due, ProjectID: w.ProjectID, CategoryID: w.CategoryID, DoerID: w.AdminID, Content: fmt.Sprintf("Step %d.\nLine two \"quoted\".", i)}
		if i%2 == 1 {
			in.ProjectID, in.CategoryID, in.DoerID = p2.ID.String(), c2.ID.String(), w.MemberID
		} else if i%3 == 0 {
			in.DoerID = gone.ID.String()
		}
		p, err := s.Service.CreateProcedure(ctx, in)
		must(err)
		out.Procedures = append(out.Procedures, p.ID.String())
	}
	out.Busy = out.Procedures[0]
	for i := range 3 {
		_, err := s.Service.UpdateProcedure(ctx, out.Busy, core.UpdateProcedureInput{Name: core.Some(fmt.Sprintf("Renamed %d", i)), State: core.Some(states[i])})
		must(err)
		_, err = s.Service.AddComment(ctx, out.Busy, fmt.Sprintf("Admin comment %d", i))
		must(err)
	}
	// The member comments through REST: the log names their token.
	for i := range 2 {
		status, body := call(t, s, w.MemberToken, "POST", "/procedures/"+out.Busy+"/comments", fmt.Sprintf(`{"text":"Member comment %d"}`, i))
		if status != http.StatusCreated && status != http.StatusOK {
			t.Fatalf("member comment: %d %s", status, body)
		}
	}
	last := out.Procedures[len(out.Procedures)-1]
	out.Deleted = last
	_, err = s.Service.UpdateProcedure(ctx, last, core.UpdateProcedureInput{Priority: core.Some("HIGH")})
	must(err)
	must(s.Service.DeleteProcedure(ctx, last))
	out.Procedures = out.Procedures[:len(out.Procedures)-1]
	_, err = s.Service.RemoveMember(ctx, gone.ID.String())
	must(err)
	pid := p2.ID.String()
	_, out.WebhookSecret, err = s.Service.CreateWebhook(ctx, core.WebhookInput{URL: "https://hooks.example.com/procsvc", Kinds: []string{"procedure.created"}, ProjectID: &pid})
	must(err)
	return out
}

// call sends one request to s with token and returns its status and body.
func call(t *testing.T, s *apitest.Server, token, method, path, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// export downloads the archive of token's workspace from s.
func export(t *testing.T, s *apitest.Server, token string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+"/workspace/export", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return b
}

// normalized is body decoded and encoded again, for comparing two answers
// whatever their spacing; requestId, which every error body carries, is
// not in the answers compared.
func normalized(t *testing.T, body []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// tenantRows counts the rows of workspace id in every table that holds a
// workspace's data.
func tenantRows(t *testing.T, db *database.DB, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, q := range []struct{ table, column string }{{"workspaces", "id"}, {"members", "workspace_id"}, {"tokens", "workspace_id"},
		{"projects", "workspace_id"}, {"categories", "workspace_id"}, {"procedures", "workspace_id"}, {"comments", "workspace_id"},
		{"events", "workspace_id"}, {"webhook_endpoints", "workspace_id"}, {"procedure_tallies", "workspace_id"}} {
		var n int
		arg := "?"
		if db.Dialect == "postgres" {
			arg = "$1"
		}
		if err := db.SQL.QueryRow("SELECT COUNT(*) FROM "+q.table+" WHERE "+q.column+" = "+arg, id).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", q.table, err)
		}
		out[q.table] = n
	}
	return out
}

// lines splits an archive into its lines.
func lines(archive []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(archive, []byte("\n")), []byte("\n"))
}

// join makes an archive of lines.
func join(ls [][]byte) []byte { return append(bytes.Join(ls, []byte("\n")), '\n') }
