package rest_test

// Hostile inputs over REST: query strings that do not parse, text that is
// not valid Unicode in JSON bodies, and timestamps outside the accepted
// range. Each is refused naming its parameter or field, and nothing is
// written.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// fieldMessage returns fields[0].message of an error body.
func fieldMessage(body map[string]any) string {
	list, _ := body["fields"].([]any)
	if len(list) == 0 {
		return ""
	}
	m, _ := list[0].(map[string]any)
	s, _ := m["message"].(string)
	return s
}

// TestMalformedQueryString: a query string url.ParseQuery refuses (";" as a
// separator, a bad percent-escape) is refused naming the parameter, on every
// route, instead of being silently shortened: "state=WAITING;&limit=1" must
// not list everything.
func TestMalformedQueryString(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		p := e.createProcedure(t, map[string]any{"name": "Todo", "state": "TODO"})
		e.createProcedure(t, map[string]any{"name": "Done", "state": "COMPLETED"})
		id := p["id"].(string)
		cases := []struct{ name, path, field string }{
			{"semicolon after a filter", "/procedures?state=WAITING;&limit=1", "state"},
			{"semicolon as separator", "/procedures?state=WAITING;limit=1", "state"},
			{"bad escape in a value", "/procedures?search=100%zz", "search"},
			{"truncated escape in a value", "/procedures?limit=1&q=%4", "q"},
			{"bad escape in a name", "/procedures?st%zzate=TODO", "st%zzate"},
			{"project list", "/projects?limit=5;", "limit"},
			{"category list", "/categories?q=a;b", "q"},
			{"member list", "/members?page=1;", "page"},
			{"one procedure", "/procedures/" + id + "?x;y", "x;y"},
			{"one member", "/members/" + e.ws.MemberID + "?a=%", "a"},
			{"bare semicolon", "/procedures?;", ";"},
			{"empty name", "/procedures?=x;", "query"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				body := wantError(t, e.do(t, "GET", tc.path, e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", tc.field)
				if msg := fieldMessage(body); !strings.Contains(msg, "malformed") {
					t.Fatalf("message %q does not say the parameter is malformed", msg)
				}
			})
		}
		t.Run("writes too", func(t *testing.T) {
			before := e.snapshot(t)
			wantError(t, e.do(t, "PUT", "/procedures/"+id+"?force=1;", e.ws.MemberToken, map[string]any{"name": "Changed"}),
				http.StatusBadRequest, "validation_failed", "force")
			wantError(t, e.do(t, "DELETE", "/procedures/"+id+"?%", e.ws.AdminToken, nil), http.StatusBadRequest, "validation_failed", "%")
			e.unchanged(t, before)
		})
		t.Run("escaped semicolon and percent are values", func(t *testing.T) {
			items, _ := wantList(t, e.do(t, "GET", "/procedures?search=a%3Bb%25", e.ws.ViewToken, nil), checkProcedure)
			if len(items) != 0 {
				t.Fatalf("search for %q matched %d procedures", "a;b%", len(items))
			}
		})
		t.Run("authentication still comes first", func(t *testing.T) {
			wantError(t, e.do(t, "GET", "/procedures?state=WAITING;", "", nil), http.StatusUnauthorized, "unauthenticated", "")
		})
	})
}

// TestInvalidUnicodeRefused: invalid UTF-8 bytes and unpaired surrogate
// escapes in a JSON body are refused as validation_failed naming the field,
// not stored as U+FFFD; valid pairs and escaped backslashes are text.
func TestInvalidUnicodeRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		p := e.createProcedure(t, map[string]any{"name": "Target"})
		proc := "/procedures/" + p["id"].(string)
		// withName is a POST /procedures body whose name member is the raw
		// JSON string s.
		withName := func(s string) rawBody {
			b := string(mustJSON(t, e.procBody(map[string]any{"name": "NAME"})))
			return rawBody(strings.Replace(b, `"NAME"`, s, 1))
		}
		cases := []struct {
			name, method, path string
			body               rawBody
			field, mentions    string
		}{
			{"lone high surrogate in name", "POST", "/procedures", withName(`"a\ud800b"`), "name", `\ud800`},
			{"lone low surrogate in name", "POST", "/procedures", withName(`"\udc00"`), "name", `\udc00`},
			{"reversed pair", "POST", "/procedures", withName(`"\ude00\ud83d"`), "name", `\ude00`},
			{"invalid byte in name", "POST", "/procedures", withName("\"caf\xe9\""), "name", "0xe9"},
			{"utf-8 encoded surrogate", "POST", "/procedures", withName("\"\xed\xa0\x80\""), "name", "0xed"},
			{"surrogate in content", "POST", "/procedures", rawBody(strings.Replace(string(withName(`"ok"`)), `{`, `{"content":"steps \udbff",`, 1)), "content", `\udbff`},
			{"surrogate in a member name", "POST", "/procedures", rawBody(strings.Replace(string(withName(`"ok"`)), `{`, `{"x\ud800":1,`, 1)), "x\uFFFD", `\ud800`},
			{"update name", "PUT", proc, rawBody(`{"name":"\ud800"}`), "name", `\ud800`},
			{"update captureId", "PUT", proc, rawBody("{\"captureId\":\"\xff\"}"), "captureId", "0xff"},
			{"comment text", "POST", proc + "/comments", rawBody(`{"text":"hi \udfff"}`), "text", `\udfff`},
			{"category name", "POST", "/categories", rawBody(`{"name":"\ud834"}`), "name", `\ud834`},
			{"project name", "POST", "/projects", rawBody("{\"name\":\"\xc0\xaf\"}"), "name", "0xc0"},
		}
		before := e.snapshot(t)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				body := wantError(t, e.do(t, tc.method, tc.path, e.ws.AdminToken, tc.body), http.StatusBadRequest, "validation_failed", tc.field)
				if msg := fieldMessage(body); !strings.Contains(msg, "UTF-8") || !strings.Contains(msg, tc.mentions) {
					t.Fatalf("message %q should say the text is not valid UTF-8 and mention %s", msg, tc.mentions)
				}
			})
		}
		e.unchanged(t, before)

		t.Run("valid pairs and escaped backslashes are text", func(t *testing.T) {
			c := wantOK(t, e.do(t, "POST", "/procedures", e.ws.MemberToken, withName(`"\ud83d\ude00 \\ud800 \uFFFD"`)))
			if got, want := c["name"], "😀 \\ud800 \uFFFD"; got != want {
				t.Fatalf("name stored as %q, want %q", got, want)
			}
		})
	})
}

// TestTimestampRange: a timestamp before 1970 (0001-01-01T00:00:00Z is the
// zero time of Go and .NET) or past 9999 is refused naming the field with
// the range, never reported as missing; the range's ends are accepted.
func TestTimestampRange(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		p := e.createProcedure(t, map[string]any{"name": "Target"})
		proj := e.createProject(t, map[string]any{"name": "Target project"})
		before := e.snapshot(t)
		cases := []struct {
			name, method, path string
			body               any
			field              string
		}{
			{"create with the zero time", "POST", "/procedures", e.procBody(map[string]any{"dueAt": "0001-01-01T00:00:00Z"}), "dueAt"},
			{"create with year 1 as a date", "POST", "/procedures", e.procBody(map[string]any{"dueAt": "0001-01-01"}), "dueAt"},
			{"create just after the zero time", "POST", "/procedures", e.procBody(map[string]any{"dueAt": "0001-01-01T00:00:00.001Z"}), "dueAt"},
			{"create in 1969", "POST", "/procedures", e.procBody(map[string]any{"dueAt": "1969-12-31T23:59:59Z"}), "dueAt"},
			{"create past 9999 by offset", "POST", "/procedures", e.procBody(map[string]any{"dueAt": "9999-12-31T23:30:00-01:00"}), "dueAt"},
			{"update with the zero time", "PUT", "/procedures/" + p["id"].(string), map[string]any{"dueAt": "0001-01-01T00:00:00Z"}, "dueAt"},
			{"project startedAt", "POST", "/projects", map[string]any{"name": "P", "startedAt": "0001-01-01T00:00:00Z"}, "startedAt"},
			{"project dueAt update", "PUT", "/projects/" + proj["id"].(string), map[string]any{"dueAt": "1900-01-01"}, "dueAt"},
			{"list filter", "GET", "/procedures?dueAt=0001-01-01T00:00:00Z", nil, "dueAt"},
			{"list filter startedAt", "GET", "/procedures?startedAt=1969-01-01", nil, "startedAt"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				body := wantError(t, e.do(t, tc.method, tc.path, e.ws.AdminToken, tc.body), http.StatusBadRequest, "validation_failed", tc.field)
				msg := fieldMessage(body)
				if strings.Contains(msg, "required") || !strings.Contains(msg, "1970-01-01") || !strings.Contains(msg, "9999-12-31") {
					t.Fatalf("message %q should give the accepted range, not call the field missing", msg)
				}
			})
		}
		e.unchanged(t, before)
		t.Run("the range's ends are accepted", func(t *testing.T) {
			c := e.createProcedure(t, map[string]any{"dueAt": "1970-01-01T00:00:00Z"})
			if c["dueAt"] != "1970-01-01T00:00:00.000Z" {
				t.Fatalf("dueAt = %v", c["dueAt"])
			}
			c = e.createProcedure(t, map[string]any{"dueAt": "9999-12-31T23:59:59.999Z"})
			if c["dueAt"] != "9999-12-31T23:59:59.999Z" {
				t.Fatalf("dueAt = %v", c["dueAt"])
			}
		})
	})
}
