package contentgen

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/procsvc/procsvc/internal/textclip"
)

// layout renders a page. Blocks are separated by blank lines freely:
// finish collapses runs of them outside code.
var layout = template.Must(template.New("doc").Funcs(template.FuncMap{
	"esc": esc, "ic": ic, "cell": cell, "plural": plural, "first": first, "clip": textclip.Bytes,
	"codes": codes, "fenced": fenced, "infoTag": infoTag,
	"inc":     func(i int) int { return i + 1 },
	"pad":     func(s string) string { return strings.Repeat(" ", len(s)) },
	"trimEnd": func(s string) string { return strings.TrimRight(s, ":;,") },
}).Parse(`# {{esc .Name}}
{{$n := len .Steps}}{{if .Simple}}{{with .Intro}}
{{esc (first (index . 0) 200)}}
{{else}}{{if .IsStandard}}
A short guide to {{.Name}}.
{{end}}{{end}}{{if .IsProcess}}
Follow these steps in order. Do the check after each step before you go on.
{{else if .IsCode}}
How this code works, step by step.
{{end}}{{else}}{{if or .Detailed (not .IsAPI)}}
## Overview
{{end}}{{range .Intro}}
{{esc .}}
{{end}}
{{if .IsProcess}}This procedure covers **{{.Name}}** in {{plural $n "step"}}. Perform the steps in order and confirm each step's check before starting the next one.
{{else if .IsStandard}}This guide covers **{{.Name}}**: {{if .Ordered}}{{plural $n "step"}}{{else}}{{plural $n "guideline"}}{{end}}.
{{else if .IsCode}}This walkthrough explains **{{.Name}}** in {{plural $n "step"}}{{with .Lang}} of {{.}} code{{end}}.{{with .Decls}} It declares {{codes . 8}}.{{end}}
{{else if .Detailed}}This reference covers **{{.Name}}**: {{plural (len .API) "endpoint"}}.
{{end}}{{if .Detailed}}
## Prerequisites
{{if .IsProcess}}
- Access and permissions for every system the steps touch, and time to finish all {{plural $n "step"}} without interruption.
- A way to undo or roll back each change, and someone to escalate to.{{else if .IsStandard}}
- Familiarity with the context of {{.Name}}, and access to the systems and documents the guide refers to.{{else if .IsCode}}
- {{with .Lang}}A working {{.}} toolchain{{else}}The tools and runtime the code needs{{end}}, and access to the project the code belongs to.{{else}}
- Network access to the service, and valid credentials if the endpoint requires authentication.
- An HTTP client such as curl{{with .Lang}}, or the HTTP library of your {{.}} project{{end}}.{{end}}
{{end}}{{end}}
{{if .IsAPI}}{{template "api" .}}{{else}}
## {{if and .IsCode (not .Simple)}}Walkthrough{{else if .Ordered}}Steps{{else}}Guidelines{{end}}
{{template "steps" .}}{{end}}{{if .Detailed}}
## Edge cases
{{if .IsAPI}}
- Missing, empty or malformed request data: validate before sending and expect 400 or 422.
- Retries: repeat only idempotent requests (GET, PUT, DELETE) automatically; a repeated POST may act twice.{{else if .IsCode}}
- Empty, missing or malformed input to {{with .Decls}}{{ic (index . 0)}}{{else}}the code{{end}}, very large inputs and slow dependencies.
- Failures of I/O, the network or the runtime: handle each error explicitly instead of ignoring it.{{else}}
- A step fails part-way or cannot be followed as written: stop, and do not work around it silently; fix the cause or escalate.
- The situation differs from what the {{if .IsProcess}}procedure{{else}}guide{{end}} assumes: stop and ask its owner rather than improvise.
- The work is interrupted or repeated: resume from the first step whose result is not as expected.{{end}}

## Troubleshooting
{{if .IsAPI}}
- 401 or 403: check the credentials and their permissions; 404: check the method, the path and any ids in it.
- 400 or 422: compare the request with the Parameters and Request sections.
- 429 or 5xx: retry later with backoff, honouring Retry-After; if it persists, contact the service owner.{{else if .IsCode}}
- Syntax or compile errors: check the {{or .Lang "language"}} version in use and that every block was copied completely.
- Unexpected output: run the steps one at a time and compare each result with its explanation above.{{else}}{{range $i, $s := .Steps}}{{if lt $i 5}}
- Step {{inc $i}} ({{clip $s.Title 60}}) does not give the expected result: find the cause, fix it, and repeat step {{inc $i}} before going on.{{end}}{{end}}
- Something was changed by mistake: roll it back, then restart from the last step whose result was as expected.{{end}}
{{end}}{{if .Simple}}{{if or .Left .Cut}}
Some of the supplied content was left out to keep this short.
{{end}}{{else if or .Notes .Codes .Left .Cut .IsStandard}}
## Notes
{{range .Notes}}
- {{esc .}}{{end}}{{with .Left}}
- {{plural . "further item"}} of the supplied content {{if eq . 1}}was{{else}}were{{end}} left out (limit reached).{{end}}{{if .Cut}}
- The supplied content was longer than the generator reads; only its beginning was used.{{end}}
{{range .Codes}}
{{fenced "" (or (infoTag .Lang) $.Tag) .Code}}{{end}}{{if not (or .Notes .Codes .Left .Cut)}}
No further notes in the supplied content.
{{end}}{{end}}

{{- define "steps"}}{{$p := .}}{{$h := and .IsCode (not .Simple)}}{{range $i, $s := .Steps}}{{$m := "- "}}{{if $p.Ordered}}{{$m = printf "%d. " (inc $i)}}{{end}}{{$in := pad $m}}{{if $h}}{{$in = ""}}
### Step {{inc $i}}: {{trimEnd (clip $s.Title 80)}}
{{if gt (len $s.Title) 80}}
{{esc $s.Title}}
{{end}}{{else}}
{{$m}}{{esc $s.Title}}{{end}}{{range $s.Subs}}
{{$in}}- {{esc .}}{{end}}{{range $s.Code}}

{{fenced $in (or (infoTag .Lang) $p.Tag) .Code}}{{if $p.IsCode}}
{{$in}}{{esc ($p.Note .)}}
{{end}}{{end}}{{with $s.Check}}

{{$in}}Check: {{.}}
{{end}}{{else}}
No steps could be read from the supplied content.{{if .IsProcess}} Add the steps of {{.Name}} here, each with the check that shows it is done.{{end}}
{{end}}
{{with .Hidden}}
{{plural . "more step"}} in the source {{if eq . 1}}is{{else}}are{{end}} not shown here.
{{end}}{{end}}

{{- define "example"}}{{if .Text}}{{esc .Text}}{{else}}{{fenced "" (infoTag .Lang) .Code}}{{end}}{{end}}

{{- define "api"}}{{$p := .}}{{$many := gt (len .API) 1}}{{if and $many (not .Simple)}}
## Endpoints
{{range .API}}
- {{ic (or .Label "(unnamed)")}}{{with .Summary}} — {{first (index . 0) 120}}{{end}}{{end}}
{{end}}{{range $i, $e := .API}}{{$h := "##"}}{{if $many}}{{$h = "###"}}
## {{if $p.Simple}}{{inc $i}}. {{else}}Endpoint {{inc $i}}: {{end}}{{ic (or $e.Label "(unnamed)")}}
{{end}}{{if $p.Simple}}
{{$h}} How to call it
{{else if not $many}}
## Endpoint
{{end}}
{{with $e.Label}}{{if $p.Simple}}Send {{ic .}}.{{else}}{{ic .}}{{end}}{{else}}The method and path are not given in the supplied content.{{end}}
{{range $e.Summary}}
{{if $p.Simple}}{{esc (first . 200)}}{{else}}{{esc .}}{{end}}
{{end}}
{{$h}} {{if $p.Simple}}What to send{{else}}Parameters{{end}}
{{if and $e.Params $p.Simple}}{{range $e.Params}}
- {{ic .Name}}{{if eq .Required "yes"}} (required){{end}}{{with .Desc}}: {{first . 120}}{{end}}{{end}}
{{else if $e.Params}}
| Name | In | Type | Required | Description |
|---|---|---|---|---|{{range $e.Params}}
| {{ic .Name}} | {{cell .In}} | {{cell .Type}} | {{cell .Required}} | {{cell .Desc}} |{{end}}
{{else}}
No parameters are specified in the supplied content.
{{end}}{{if not $p.Simple}}
{{$h}} Request
{{end}}{{range $e.Request}}
{{template "example" .}}
{{else}}
{{if or (eq $e.Method "GET") (eq $e.Method "HEAD") (eq $e.Method "DELETE")}}No request body.{{else}}No request body is specified in the supplied content.{{end}}
{{end}}
{{$h}} {{if $p.Simple}}What you get back{{else}}Responses{{end}}
{{range $e.Responses}}
{{if and .Status .Desc}}**{{.Status}}** — {{.Desc}}{{else if .Status}}**{{.Status}}**{{else if .Desc}}{{esc .Desc}}{{else}}Example response:{{end}}
{{with .Example}}
{{template "example" .}}{{end}}
{{else}}
No responses are specified in the supplied content.
{{end}}{{if and $e.Extra (not $p.Simple)}}
{{$h}}# Other details
{{range $e.Extra}}
- {{esc .}}{{end}}
{{end}}{{end}}{{with .Hidden}}
{{plural . "more endpoint"}} not shown here.
{{end}}{{end}}`))

var (
	reBlockStart = regexp.MustCompile("^(?:[#>|=~]|```|[-*+_](?:[\\s*+_-]*$|\\s))")
	reInfo       = regexp.MustCompile(`^[A-Za-z0-9+#._-]{1,24}$`)
)

// esc puts s on one line and keeps it from being read as Markdown structure
// (a heading, quote, list item, table row, rule or fence) at a line start.
func esc(s string) string {
	s = oneLine(s)
	if n := len(s) - len(strings.TrimLeft(s, "0123456789")); n > 0 && n < len(s) && (s[n] == '.' || s[n] == ')') {
		return s[:n] + `\` + s[n:] // 1\. is not a list item
	} else if reBlockStart.MatchString(s) {
		return `\` + s
	}
	return s
}

// ic is s as inline code.
func ic(s string) string {
	if s = textclip.Bytes(oneLine(s), 300); strings.Contains(s, "`") {
		return "`` " + s + " ``"
	} else if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// cell makes s safe for a table cell ("—" when empty).
func cell(s string) string {
	if s = strings.NewReplacer(`\`, `\\`, "|", `\|`).Replace(textclip.Bytes(oneLine(s), 300)); s == "" {
		return "—"
	}
	return s
}

// codes joins names as inline code, at most max of them.
func codes(names []string, max int) string {
	var parts []string
	for _, s := range names[:min(len(names), max)] {
		parts = append(parts, ic(s))
	}
	if len(names) > max {
		parts = append(parts, "…")
	}
	return strings.Join(parts, ", ")
}

// first is the first sentence of s, at most max bytes.
func first(s string, max int) string {
	if ss := sentences(s); len(ss) > 0 {
		s = ss[0]
	}
	return textclip.Bytes(s, max)
}

// plural is "n word" or "n words".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// infoTag is the first word of s when it makes a safe code fence info
// string, lower-cased, else "".
func infoTag(s string) string {
	if f := strings.Fields(s); len(f) > 0 && reInfo.MatchString(f[0]) {
		return strings.ToLower(f[0])
	}
	return ""
}

// fenced is body as a fenced code block, every line indented, the fence
// longer than any run of backticks in body.
func fenced(indent, tag, body string) string {
	fence := "```"
	for _, run := range strings.FieldsFunc(body, func(r rune) bool { return r != '`' }) {
		fence = strings.Repeat("`", max(len(fence), len(run)+1))
	}
	body = strings.ReplaceAll(strings.TrimRight(body, "\n"), "\n", "\n"+indent)
	return indent + fence + tag + "\n" + indent + body + "\n" + indent + fence + "\n"
}
