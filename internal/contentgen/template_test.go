package contentgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
)

// gen runs the template provider.
func gen(t *testing.T, req core.GenerateRequest) string {
	t.Helper()
	out, err := Template{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return out
}

// headings returns the Markdown headings of doc ("## Steps"), outside code
// fences.
func headings(doc string) []string {
	var hs []string
	fence := ""
	for _, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, "`") == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") {
			fence = t[:len(t)-len(strings.TrimLeft(t, "`"))]
			continue
		}
		if strings.HasPrefix(l, "#") {
			hs = append(hs, l)
		}
	}
	return hs
}

func hasHeading(doc, h string) bool {
	for _, x := range headings(doc) {
		if x == h || strings.HasPrefix(x, h+":") {
			return true
		}
	}
	return false
}

// Representative content per content type.
var sample = map[string]string{
	"process":  "1. Generate new keys with `keygen --bits 4096`\n2. Deploy the keys to prod\n3. Revoke the old ones",
	"standard": "Key rotation keeps credentials fresh.\n\n1. Generate new keys\n2. Deploy them\n3. Revoke the old ones\n\nRotate at least yearly.",
	"api":      `{"method":"POST","path":"/v1/keys/{keyId}/rotate","description":"Rotate a key","params":[{"name":"keyId","in":"path","type":"string","required":true,"description":"the key"}],"body":{"bits":4096},"responses":{"200":{"description":"rotated","body":{"keyId":"k1"}},"404":"no such key"}}`,
	"code":     "Create the key:\n\n```\nconst key = generateKey(4096);\n```\n\nThen store it:\n\n```\nfunction store(k) {\n  vault.put('key', k);\n}\n```\n",
}

func TestTemplateSections(t *testing.T) {
	deep := []string{"## Prerequisites", "## Edge cases", "## Troubleshooting"}
	tests := []struct {
		ctype, style string
		want, not    []string
	}{
		{"process", "technical", []string{"## Overview", "## Steps"}, deep},
		{"process", "simplified", []string{"## Steps"}, append([]string{"## Overview", "## Notes"}, deep...)},
		{"process", "detailed", append([]string{"## Overview", "## Steps"}, deep...), nil},
		{"api", "technical", []string{"## Endpoint", "## Parameters", "## Request", "## Responses"}, deep},
		{"api", "simplified", []string{"## How to call it", "## What to send", "## What you get back"}, append([]string{"## Parameters", "## Endpoint", "## Overview"}, deep...)},
		{"api", "detailed", append([]string{"## Overview", "## Endpoint", "## Parameters", "## Request", "## Responses"}, deep...), nil},
		{"code", "technical", []string{"## Overview", "## Walkthrough", "### Step 1", "### Step 2"}, deep},
		{"code", "simplified", []string{"## Steps"}, append([]string{"## Overview", "## Walkthrough"}, deep...)},
		{"code", "detailed", append([]string{"## Overview", "## Walkthrough", "### Step 1", "### Step 2"}, deep...), nil},
		{"standard", "technical", []string{"## Overview", "## Steps", "## Notes"}, deep},
		{"standard", "simplified", []string{"## Steps"}, append([]string{"## Overview", "## Notes"}, deep...)},
		{"standard", "detailed", append([]string{"## Overview", "## Steps", "## Notes"}, deep...), nil},
	}
	for _, tt := range tests {
		t.Run(tt.ctype+"/"+tt.style, func(t *testing.T) {
			doc := gen(t, core.GenerateRequest{Name: "Rotate keys", Content: sample[tt.ctype], ContentType: tt.ctype, DocStyle: tt.style, Language: "typescript"})
			if !strings.HasPrefix(doc, "# Rotate keys\n") {
				t.Errorf("document does not start with the title:\n%s", doc)
			}
			for _, h := range tt.want {
				if !hasHeading(doc, h) {
					t.Errorf("missing heading %q; headings %q\n%s", h, headings(doc), doc)
				}
			}
			for _, h := range tt.not {
				if hasHeading(doc, h) {
					t.Errorf("unexpected heading %q; headings %q", h, headings(doc))
				}
			}
			if tt.style == "simplified" {
				long := gen(t, core.GenerateRequest{Name: "Rotate keys", Content: sample[tt.ctype], ContentType: tt.ctype, DocStyle: "detailed", Language: "typescript"})
				if len(doc) >= len(long) {
					t.Errorf("simplified (%d bytes) is not shorter than detailed (%d bytes)", len(doc), len(long))
				}
			}
		})
	}
}

// stepChecks counts the numbered steps of doc and those whose item ends
// with a "Check:" line (after any sub-points or code of the step).
func stepChecks(doc string) (steps int, checked int) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if n := len(l) - len(strings.TrimLeft(l, "0123456789")); n == 0 || !strings.HasPrefix(l[n:], ". ") {
			continue
		}
		steps++
		last := ""
		for _, next := range lines[i+1:] {
			if next != "" && next[0] != ' ' {
				break // the item ended
			}
			if t := strings.TrimSpace(next); t != "" {
				last = t
			}
		}
		if strings.HasPrefix(last, "Check: ") {
			checked++
		}
	}
	return steps, checked
}

// fenceTags returns the info strings of the code blocks of doc.
func fenceTags(doc string) []string {
	var tags []string
	fence := ""
	for _, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		run := t[:len(t)-len(strings.TrimLeft(t, "`"))]
		switch {
		case fence == "":
			fence = run
			tags = append(tags, t[len(run):])
		case run == fence && t == run:
			fence = ""
		}
	}
	return tags
}

func TestProcessStepsHaveChecks(t *testing.T) {
	tests := []struct {
		name, content string
		steps         int
		contains      []string
	}{
		{"numbered text", "1. Generate new keys\n2. Deploy\n3. Revoke the old ones", 3, []string{"Generate new keys", "Revoke the old ones"}},
		{"bulleted text with a supplied check", "- Build the image\n  Check: `docker images` lists it\n- Push it", 2, []string{"Check: `docker images` lists it"}},
		{"step prefixes", "Step 1: Stop the service\nStep 2: Back up /var/lib/db\nStep 3: Start the service", 3, []string{"Back up /var/lib/db"}},
		{"sentences", "Stop the service. Back up the database. Start the service again.", 3, []string{"Back up the database."}},
		{"plain lines", "Stop the service\nBack up the database\nStart it", 3, []string{"Start it"}},
		{"JSON array of strings", `["Stop the service","Back up the database"]`, 2, []string{"Back up the database"}},
		{"JSON array of objects", `[{"step":1,"name":"Stop","description":"stop the api","check":"no traffic"},{"title":"Start","command":"systemctl start api"}]`, 2, []string{"Stop", "stop the api", "Check: no traffic", "systemctl start api"}},
		{"JSON object with steps", `{"description":"Nightly restore drill","steps":[{"step":"Restore"},{"step":"Verify row counts"}],"owner":"ops"}`, 2, []string{"Nightly restore drill", "Verify row counts", "owner: ops"}},
		{"code in a step", "1. Build:\n```sh\nmake build\n```\n2. Ship", 2, []string{"```sh", "make build"}},
		{"JSON commands array", `[{"title":"Test","commands":["npm ci","npm test"]}]`, 1, []string{"Test", "   npm ci\n   npm test\n"}},
	}
	for _, tt := range tests {
		for _, style := range []string{"technical", "simplified", "detailed"} {
			t.Run(tt.name+"/"+style, func(t *testing.T) {
				doc := gen(t, core.GenerateRequest{Name: "Drill", Content: tt.content, ContentType: "process", DocStyle: style, Language: "other"})
				steps, checked := stepChecks(doc)
				if steps != tt.steps || checked != tt.steps {
					t.Errorf("%d numbered steps, %d followed by Check:, want %d each\n%s", steps, checked, tt.steps, doc)
				}
				if style == "simplified" {
					return
				}
				for _, c := range tt.contains {
					if !strings.Contains(doc, c) {
						t.Errorf("missing %q\n%s", c, doc)
					}
				}
			})
		}
	}
}

func TestStandardGuidelinesAndSteps(t *testing.T) {
	doc := gen(t, core.GenerateRequest{Name: "Style", Content: "- Use tabs\n- Keep lines short\n- Name things well", ContentType: "standard", DocStyle: "technical"})
	if !hasHeading(doc, "## Guidelines") || hasHeading(doc, "## Steps") || !strings.Contains(doc, "- Keep lines short") {
		t.Errorf("bulleted content should give Guidelines:\n%s", doc)
	}
	doc = gen(t, core.GenerateRequest{Name: "Style", Content: "1. Fork\n2. Branch", ContentType: "standard", DocStyle: "technical"})
	if !hasHeading(doc, "## Steps") || !strings.Contains(doc, "1. Fork\n") || !strings.Contains(doc, "2. Branch\n") {
		t.Errorf("numbered content should give Steps:\n%s", doc)
	}
}

func TestAPIParsing(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"single JSON endpoint", sample["api"], []string{"## Endpoint\n\n`POST /v1/keys/{keyId}/rotate`", "| `keyId` | path | string | yes | the key |", "\"bits\": 4096", "**200** — rotated", "**404** — no such key"}},
		{"JSON array of endpoints", `[{"method":"GET","endpoint":"/users","response":{"status":200,"users":[]}},{"endpoint":"DELETE /users/{id}","status":204,"parameters":{"id":{"type":"uuid","required":true}}}]`,
			[]string{"## Endpoints", "## Endpoint 1: `GET /users`", "## Endpoint 2: `DELETE /users/{id}`", "### Parameters", "### Request", "### Responses", "| `id` | path | uuid | yes |", "**204**", "**200**"}},
		{"OpenAPI paths", `{"paths":{"/pets":{"get":{"summary":"List pets","parameters":[{"name":"limit","in":"query","schema":{"type":"integer"}}],"responses":{"200":{"description":"A list"}}},"post":{"summary":"Add a pet"}}}}`,
			[]string{"`GET /pets`", "`POST /pets`", "| `limit` | query | integer |", "**200** — A list", "Add a pet"}},
		{"endpoints object", `{"endpoints":{"GET /a":{"description":"first"},"PUT /b":{"body":{"x":1}}}}`, []string{"`GET /a`", "`PUT /b`", "\"x\": 1"}},
		{"text", "Fetch one user.\n\nGET /users/{id}\n\nParameters:\n- id (string, required): the user's id\n- expand (optional): related data\n\nResponses:\n200 OK - the user\n```json\n{\"id\":\"u1\"}\n```\n404 Not Found - no such user",
			[]string{"Fetch one user.", "`GET /users/{id}`", "| `id` | path | string | yes | the user's id |", "| `expand` | — | — | no | related data |", "**200** — OK - the user", "{\"id\":\"u1\"}", "**404** — Not Found - no such user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := gen(t, core.GenerateRequest{Name: "Keys API", Content: tt.content, ContentType: "api", DocStyle: "technical", Language: "other"})
			for _, w := range tt.want {
				if !strings.Contains(doc, w) {
					t.Errorf("missing %q\n%s", w, doc)
				}
			}
			if strings.Contains(tt.content, "param") && !strings.Contains(doc, "| Name | In | Type | Required | Description |\n|---|---|---|---|---|\n| `") {
				t.Errorf("no parameters table\n%s", doc)
			}
		})
	}
}

func TestCodeFencesCarryLanguage(t *testing.T) {
	tests := []struct{ lang, tag string }{
		{"typescript", "typescript"},
		{"javascript", "javascript"},
		{"python", "python"},
		{"java", "java"},
		{"csharp", "csharp"},
		{"other", ""},
	}
	for _, tt := range tests {
		for _, style := range []string{"technical", "simplified", "detailed"} {
			t.Run(tt.lang+"/"+style, func(t *testing.T) {
				doc := gen(t, core.GenerateRequest{Name: "Keys", Content: sample["code"], ContentType: "code", DocStyle: style, Language: tt.lang})
				if tags := fenceTags(doc); len(tags) != 2 || tags[0] != tt.tag || tags[1] != tt.tag {
					t.Errorf("code blocks tagged %q, want two tagged %q\n%s", tags, tt.tag, doc)
				}
				if !strings.Contains(doc, "generateKey(4096)") || !strings.Contains(doc, "vault.put('key', k);") {
					t.Errorf("code not kept verbatim\n%s", doc)
				}
				if !strings.Contains(doc, "`store`") {
					t.Errorf("explanation does not name the declared function\n%s", doc)
				}
			})
		}
	}
	// a block's own tag wins; unfenced code is recognised
	doc := gen(t, core.GenerateRequest{Name: "Setup", Content: "Install:\n```bash\nnpm ci\n```\nThen:\n\nconst app = createApp();\napp.listen(3000);", ContentType: "code", DocStyle: "technical", Language: "typescript"})
	for _, w := range []string{"```bash\nnpm ci\n```", "```typescript\nconst app = createApp();\napp.listen(3000);\n```", "### Step 1: Install", "### Step 2: Then"} {
		if !strings.Contains(doc, w) {
			t.Errorf("missing %q\n%s", w, doc)
		}
	}
	// a fence inside the code gets a longer fence around it
	doc = gen(t, core.GenerateRequest{Name: "Md", Content: "````md\n```js\nx()\n```\n````", ContentType: "code", DocStyle: "technical", Language: "javascript"})
	if !strings.Contains(doc, "````md\n```js\nx()\n```\n````") {
		t.Errorf("nested fence not preserved\n%s", doc)
	}
}

func TestTechnicalKeepsIdentifiersVerbatim(t *testing.T) {
	content := "1. Set `MAX_CONN_POOL=20` in config/prod.yaml\n2. Call userService.refreshTokens(ctx) with ttl=15m\n3. Run kubectl rollout restart deploy/api-gw"
	for _, ctype := range []string{"process", "standard"} {
		for _, style := range []string{"technical", "detailed"} {
			doc := gen(t, core.GenerateRequest{Name: "Tune pool_size", Content: content, ContentType: ctype, DocStyle: style})
			for _, w := range []string{"# Tune pool_size", "`MAX_CONN_POOL=20`", "config/prod.yaml", "userService.refreshTokens(ctx)", "ttl=15m", "kubectl rollout restart deploy/api-gw"} {
				if !strings.Contains(doc, w) {
					t.Errorf("%s/%s: %q not kept verbatim\n%s", ctype, style, w, doc)
				}
			}
		}
	}
}

func TestSimplifiedIsShort(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString(strconv.Itoa(i) + ". Do thing " + strconv.Itoa(i) + ". It has a long explanation that goes on. And on.\n")
	}
	doc := gen(t, core.GenerateRequest{Name: "Many", Content: b.String(), ContentType: "process", DocStyle: "simplified"})
	if steps, _ := stepChecks(doc); steps != maxSimpleSteps {
		t.Errorf("simplified shows %d steps, want %d", steps, maxSimpleSteps)
	}
	if strings.Contains(doc, "long explanation") {
		t.Errorf("simplified keeps more than the first sentence\n%s", doc)
	}
	if !strings.Contains(doc, "20 more steps") {
		t.Errorf("simplified does not say steps were left out\n%s", doc)
	}
}

func TestNormalization(t *testing.T) {
	doc := gen(t, core.GenerateRequest{Name: "  ", Content: "1. a", ContentType: "weird", DocStyle: "", Language: "cobol"})
	if !strings.HasPrefix(doc, "# Procedure\n") || !hasHeading(doc, "## Steps") || !hasHeading(doc, "## Notes") {
		t.Errorf("unknown values should fall back to standard/technical/other:\n%s", doc)
	}
	doc = gen(t, core.GenerateRequest{Name: "# Heading\nInjection", Content: "", ContentType: "process", DocStyle: "technical"})
	if !strings.HasPrefix(doc, "# \\# Heading Injection\n") {
		t.Errorf("name not made safe for a title:\n%s", doc)
	}
	if !strings.Contains(doc, "No steps could be read") {
		t.Errorf("empty content should say so:\n%s", doc)
	}
	for _, ctype := range []string{"process", "standard", "api", "code"} {
		for _, style := range []string{"technical", "simplified", "detailed"} {
			doc := gen(t, core.GenerateRequest{Name: "Empty", ContentType: ctype, DocStyle: style})
			if !strings.HasPrefix(doc, "# Empty\n") || len(headings(doc)) < 2 {
				t.Errorf("%s/%s with no content:\n%s", ctype, style, doc)
			}
		}
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Template{}.Generate(ctx, core.GenerateRequest{Name: "x"})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.GenerationFailed {
		t.Errorf("cancelled: got %v, want generation_failed", err)
	}
}

func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	contents := []string{sample["process"], sample["api"], sample["code"], sample["standard"], randomBytes(r, 4096),
		`{"b":1,"a":2,"c":{"z":[1,2,3],"y":null}}`, "Step one. Step two!\n\n- x\n- y"}
	for _, c := range contents {
		for _, ctype := range []string{"process", "standard", "api", "code"} {
			for _, style := range []string{"technical", "simplified", "detailed"} {
				req := core.GenerateRequest{Name: "Same", Content: c, ContentType: ctype, DocStyle: style, Language: "java"}
				first := gen(t, req)
				for i := 0; i < 3; i++ {
					if again := gen(t, req); again != first {
						t.Fatalf("%s/%s: output differs between runs", ctype, style)
					}
				}
			}
		}
	}
}

func randomBytes(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	// make sure the awkward bytes are there
	copy(b, []byte{0, 0xff, 0xfe, '\n', 0xc3, '`', '`', '`', '\n', 0xe2, 0x82, 0})
	return string(b)
}

func hostileInputs() map[string]string {
	r := rand.New(rand.NewPCG(7, 11))
	deepArray := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	var obj strings.Builder
	obj.WriteString("{")
	for i := 0; i < 100_000; i++ {
		if i > 0 {
			obj.WriteString(",")
		}
		obj.WriteString(`"key` + strconv.Itoa(i) + `":"value ` + strconv.Itoa(i) + `"`)
	}
	obj.WriteString("}")
	var lines strings.Builder
	for i := 0; i < 100_000; i++ {
		lines.WriteString(strconv.Itoa(i) + ". step " + strconv.Itoa(i) + "\n")
	}
	return map[string]string{
		"10 MiB of text":           strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10<<20/45+1),
		"10 MiB single word":       strings.Repeat("a", 10<<20),
		"random bytes":             randomBytes(r, 1<<20),
		"NULs":                     strings.Repeat("\x00", 100_000),
		"invalid UTF-8":            strings.Repeat("\xff\xfe\xc3(\xe2\x28\xa1", 50_000),
		"100000-deep JSON array":   deepArray,
		"100000-deep JSON object":  strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000),
		"JSON object, 100000 keys": obj.String(),
		"100000 numbered lines":    lines.String(),
		"unterminated fence":       "```\n" + strings.Repeat("x := `a`\n", 200_000),
		"many fences":              strings.Repeat("```go\nfunc f() {}\n```\nexplain\n", 20_000),
		"backtick runs":            strings.Repeat("`", 70_000),
		"deep list":                strings.Repeat("      - item\n", 100_000),
		"long line with colons":    strings.Repeat("GET /x: ", 100_000),
		"JSON with 100000 params":  `{"path":"/x","params":{` + strings.TrimSuffix(strings.Repeat(`"p":"string",`, 100_000), ",") + `}}`,
	}
}

func TestHostileInputIsBounded(t *testing.T) {
	for name, content := range hostileInputs() {
		for _, ctype := range []string{"process", "standard", "api", "code"} {
			for _, style := range []string{"technical", "simplified", "detailed"} {
				start := time.Now()
				doc := gen(t, core.GenerateRequest{Name: name + "\x00\xff", Content: content, ContentType: ctype, DocStyle: style, Language: "python"})
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("%s %s/%s took %s", name, ctype, style, d)
				}
				if len(doc) > maxOutputBytes {
					t.Errorf("%s %s/%s: %d bytes, cap %d", name, ctype, style, len(doc), maxOutputBytes)
				}
				if !utf8.ValidString(doc) || strings.ContainsRune(doc, 0) {
					t.Errorf("%s %s/%s: output is not clean UTF-8", name, ctype, style)
				}
				if !strings.HasPrefix(doc, "# ") || len(headings(doc)) < 2 {
					t.Errorf("%s %s/%s: no document structure:\n%.500s", name, ctype, style, doc)
				}
			}
		}
	}
}

func TestOutputCapKeepsFencesClosed(t *testing.T) {
	// every block is distinct, the total far beyond the output cap
	var b strings.Builder
	for i := 0; b.Len() < maxInputBytes-200; i++ {
		b.WriteString("Step " + strconv.Itoa(i) + " does a thing.\n```\nline " + strconv.Itoa(i) + " " + strings.Repeat("x", 300) + "\n```\n")
	}
	for _, ctype := range []string{"process", "standard", "code"} {
		doc := gen(t, core.GenerateRequest{Name: "Big", Content: b.String(), ContentType: ctype, DocStyle: "detailed"})
		if len(doc) > maxOutputBytes {
			t.Fatalf("%s: %d bytes > cap", ctype, len(doc))
		}
		if !strings.Contains(doc, truncNote) {
			t.Errorf("%s: truncated output does not say so", ctype)
		}
		fences := 0
		for _, l := range strings.Split(doc, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fences++
			}
		}
		if fences%2 != 0 {
			t.Errorf("%s: %d fence lines: a code block is left open", ctype, fences)
		}
	}
}

func TestParseJSONBounds(t *testing.T) {
	root := parseJSON(strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000))
	if root == nil {
		t.Fatal("deep array not read")
	}
	depth, n := 0, root
	for len(n.vals) == 1 {
		n, depth = n.vals[0], depth+1
	}
	if depth != maxJSONDepth || !n.deep {
		t.Errorf("kept depth %d (deep=%v), want %d", depth, n.deep, maxJSONDepth)
	}
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"x":[1,2,{"y":3}]}`)
	}
	b.WriteString("]")
	root = parseJSON(b.String())
	if root == nil || len(root.vals) != maxJSONChildren || root.more != 1000-maxJSONChildren {
		t.Fatalf("wide array: %+v", root)
	}
	if got := root.vals[0].pretty(); got != "{\n  \"x\": [\n    1,\n    2,\n    {\n      \"y\": 3\n    }\n  ]\n}" {
		t.Errorf("pretty = %q", got)
	}
	// beyond encoding/json's nesting limit, and not one valid object or array
	for _, bad := range []string{strings.Repeat("[", 40_000) + strings.Repeat("]", 40_000), `{"a":1} x`, `{"a":1} {}`, `{"a":`, `[1,]`, `{"a" 1}`, `"s"`, `1`} {
		if parseJSON(bad) != nil {
			t.Errorf("parseJSON(%.20q): want nil", bad)
		}
	}
	// invalid JSON is read as text
	doc := gen(t, core.GenerateRequest{Name: "x", Content: `{not json} 1. x`, ContentType: "process"})
	if !strings.Contains(doc, "1. {not json} 1. x\n") {
		t.Errorf("invalid JSON should be read as text:\n%s", doc)
	}
}

// FuzzTemplate checks the bounds on arbitrary content; `go test` runs the
// seeds, `go test -fuzz=FuzzTemplate` explores further.
func FuzzTemplate(f *testing.F) {
	for _, s := range sample {
		f.Add(s, uint8(0))
	}
	for _, s := range []string{"", "```", "[", "{", `{"a":[{"b":`, "1. x\n   - y\nCheck: z", "GET /x\nParameters:\n- a (int): b\n200 OK", "\x00\xff```\n`", "# h\n## h2\n---\n* a"} {
		f.Add(s, uint8(7))
	}
	ctypes := []string{"process", "standard", "api", "code"}
	styles := []string{"technical", "simplified", "detailed"}
	langs := []string{"typescript", "javascript", "python", "java", "csharp", "other"}
	f.Fuzz(func(t *testing.T, content string, sel uint8) {
		req := core.GenerateRequest{Name: content, Content: content,
			ContentType: ctypes[int(sel)%4], DocStyle: styles[int(sel/4)%3], Language: langs[int(sel/12)%6]}
		doc, err := Template{}.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if len(doc) > maxOutputBytes || !utf8.ValidString(doc) || !strings.HasPrefix(doc, "# ") || strings.ContainsRune(doc, 0) {
			t.Fatalf("bad output (%d bytes):\n%.300s", len(doc), doc)
		}
	})
}
