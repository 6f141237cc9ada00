package archive_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestExportIsForAdminsOfTheirOwnWorkspace: GET /workspace/export answers
// members and viewers forbidden, and a request without a token
// unauthenticated, in the API's error body; other methods get 405 with
// Allow; HEAD answers the headers alone; an admin's archive holds their
// workspace only, whatever the other workspace of the database holds.
func TestExportIsForAdminsOfTheirOwnWorkspace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		s := apitest.Start(t, db)
		a := seed(t, s, s.NewWorkspace(t, "Acme", "ACME"), 3)
		b := seed(t, s, s.NewWorkspace(t, "Beta", "BETA"), 2)
		for _, tc := range []struct {
			token, method string
			status        int
			code          string
		}{
			{a.MemberToken, "GET", http.StatusForbidden, "forbidden"},
			{a.ViewToken, "GET", http.StatusForbidden, "forbidden"},
			{"", "GET", http.StatusUnauthorized, "unauthenticated"},
			{"pms_not-a-token-at-all-xxxxxxxx", "GET", http.StatusUnauthorized, "unauthenticated"},
			{a.AdminToken, "POST", http.StatusMethodNotAllowed, "method_not_allowed"},
			{a.AdminToken, "DELETE", http.StatusMethodNotAllowed, "method_not_allowed"},
		} {
			status, body := call(t, s, tc.token, tc.method, "/workspace/export", "")
			var e struct{ Code, Message, RequestID string }
			if err := json.Unmarshal(body, &e); err != nil || status != tc.status || e.Code != tc.code || e.Message == "" || e.RequestID == "" {
				t.Errorf("%s as %.8s: %d %s, want %d with code %s", tc.method, tc.token, status, body, tc.status, tc.code)
			}
		}
		status, body := call(t, s, a.MemberToken, "GET", "/workspace/export", "")
		if status != http.StatusForbidden || !bytes.Contains(body, []byte("this action needs the ADMIN role")) {
			t.Errorf("a member's export: %d %s", status, body)
		}

		req, _ := http.NewRequest("HEAD", s.URL+"/workspace/export", nil)
		req.Header.Set("Authorization", "Bearer "+a.AdminToken)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" ||
			!bytes.Contains([]byte(resp.Header.Get("Content-Disposition")), []byte(a.ID)) {
			t.Errorf("HEAD: %d %v", resp.StatusCode, resp.Header)
		}

		// Tenancy: each admin's archive holds their workspace, none of
		// the other's ids.
		for _, tc := range []struct{ mine, theirs *seeded }{{a, b}, {b, a}} {
			arch := export(t, s, tc.mine.AdminToken)
			if !bytes.Contains(arch, []byte(tc.mine.Busy)) {
				t.Fatalf("%s's archive lacks its own procedure", tc.mine.ID)
			}
			for _, id := range append([]string{tc.theirs.ID, tc.theirs.ProjectID, tc.theirs.CategoryID, tc.theirs.MemberID, tc.theirs.AdminID}, tc.theirs.Procedures...) {
				if bytes.Contains(arch, []byte(id)) {
					t.Errorf("%s's archive holds %s of the other workspace", tc.mine.ID, id)
				}
			}
		}
	})
}
