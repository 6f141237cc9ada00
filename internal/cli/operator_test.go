package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/dbtest"
)

// TestMemberListPagesThroughEveryMember: member list shows every current
// member of the workspace asked for (id, name, email, role), by name,
// across pages, and none of another workspace's.
func TestMemberListPagesThroughEveryMember(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(dialect, func(t *testing.T) {
			dbURL := "sqlite://" + filepath.Join(t.TempDir(), "members.db")
			if dialect == "postgres" {
				dbURL = dbtest.CreatePostgres(t)
			}
			ops := func(args ...string) string {
				t.Helper()
				code, out, errOut := run(append(args, "--database-url", dbURL)...)
				if code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
				}
				return out
			}
			workspaceID := func(out string) string {
				t.Helper()
				m := regexp.MustCompile(`(?m)^workspace:\s+(\S+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no workspace id in:\n%s", out)
				}
				return m[1]
			}
			ops("migrate")
			ws := workspaceID(ops("workspace", "create", "--name", "Acme", "--key", "ACME", "--admin-email", "ops@acme.test", "--admin-name", "Ada"))
			other := workspaceID(ops("workspace", "create", "--name", "Other", "--key", "OTH", "--admin-email", "x@other.test", "--admin-name", "Xavier"))
			bo := regexp.MustCompile(`member: (\S+)`).FindStringSubmatch(ops("member", "add", "--workspace", ws, "--name", "Bo", "--email", "bo@acme.test", "--role", "viewer"))
			ops("member", "add", "--workspace", ws, "--name", "Cy", "--email", "cy@acme.test")
			ops("member", "add", "--workspace", ws, "--name", "Di", "--email", "di@acme.test", "--role", "ADMIN")
			ops("member", "add", "--workspace", other, "--name", "Eve", "--email", "eve@other.test")

			// Two a page: the four members take two pages.
			defer func(n int) { memberPageSize = n }(memberPageSize)
			memberPageSize = 2
			lines := strings.Split(strings.TrimSpace(ops("member", "list", "--workspace", ws)), "\n")
			want := [][]string{{"ID", "NAME", "EMAIL", "ROLE"},
				{"Ada", "ops@acme.test", "ADMIN"}, {"Bo", "bo@acme.test", "VIEWER"},
				{"Cy", "cy@acme.test", "MEMBER"}, {"Di", "di@acme.test", "ADMIN"}}
			if len(lines) != len(want) {
				t.Fatalf("member list: %d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
			}
			if bo == nil || !strings.HasPrefix(lines[2], bo[1]+" ") {
				t.Fatalf("Bo's line does not start with the id member add printed (%v):\n%s", bo, lines[2])
			}
			for i, line := range lines {
				got := strings.Fields(line)
				if i > 0 {
					// An id, then the member.
					if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(got[0]) {
						t.Fatalf("line %d has no member id:\n%s", i, line)
					}
					got = got[1:]
				}
				if strings.Join(got, " ") != strings.Join(want[i], " ") {
					t.Fatalf("line %d is %q, want %q", i, line, strings.Join(want[i], " "))
				}
			}
			if code, _, errOut := run("member", "list", "--database-url", dbURL); code != 1 || !strings.Contains(errOut, "--workspace is required") {
				t.Fatalf("member list without --workspace: exit %d\n%s", code, errOut)
			}
		})
	}
}
