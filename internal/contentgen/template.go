package contentgen

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/genchoice"
	"github.com/procsvc/procsvc/internal/textclip"
)

// Template is the offline provider: a deterministic function of the request
// (no randomness, no clock, no network); see the package documentation.
type Template struct{}

// Generate renders req. It fails only when ctx is already done (or, as a
// last line of defence, if rendering panicked: the panic becomes an error
// instead of taking the request down).
func (Template) Generate(ctx context.Context, req core.GenerateRequest) (out string, err error) {
	if err := ctx.Err(); err != nil {
		return "", &apperr.Error{Code: apperr.GenerationFailed, Message: "content generation was cancelled before it started", Err: err}
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", &apperr.Error{Code: apperr.GenerationFailed,
				Message: "content generation failed: the template could not render this content",
				Err:     fmt.Errorf("template panic: %v", r)}
		}
	}()
	return render(req), nil
}

// normalize returns req with its name made a safe one-line title and each
// choice one of its values, a value it does not know being the default.
func normalize(req core.GenerateRequest) core.GenerateRequest {
	pick := func(v string, def string, allowed []string) string {
		if v = strings.ToLower(strings.TrimSpace(v)); slices.Contains(allowed, v) {
			return v
		}
		return def
	}
	name, _ := sanitize(req.Name, 4*maxTitleRunes)
	if r := []rune(oneLine(name)); len(r) > maxTitleRunes {
		name = strings.TrimRightFunc(string(r[:maxTitleRunes]), unicode.IsSpace) + "…"
	}
	req.Name = cmp.Or(oneLine(name), "Procedure")
	req.ContentType = pick(req.ContentType, genchoice.DefaultContentType, genchoice.ContentTypes)
	req.DocStyle = pick(req.DocStyle, genchoice.DefaultDocStyle, genchoice.DocStyles)
	req.Language = pick(req.Language, genchoice.DefaultLanguage, genchoice.Languages)
	return req
}

// langNames are the display names of the languages (none for Other).
var langNames = map[string]string{genchoice.TypeScript: "TypeScript", genchoice.JavaScript: "JavaScript",
	genchoice.Python: "Python", genchoice.Java: "Java", genchoice.CSharp: "C#"}

// fenceTag is the code fence info string of a language ("" for other).
func fenceTag(lang string) string {
	if langNames[lang] == "" {
		return ""
	}
	return lang
}

// block is a code block, or (Text) a line of prose where an example goes.
type block struct{ Lang, Code, Text string }

type step struct {
	Title, Check string
	Subs         []string
	Code         []block
}

// page is what the layout renders.
type page struct {
	Kind, Name, Lang, Tag     string // Lang, Tag: the language's name and fence info string
	Simple, Detailed, Ordered bool   // Ordered: the steps are numbered
	Intro, Notes              []string
	Steps                     []step
	Codes                     []block // code before the first step
	API                       []*endpoint
	Hidden, Left              int  // steps (or endpoints) not shown; items not read
	Cut                       bool // the content was longer than read
}

// IsAPI, IsCode, IsProcess and IsStandard tell the layout the content type.
func (p *page) IsAPI() bool      { return p.Kind == genchoice.API }
func (p *page) IsCode() bool     { return p.Kind == genchoice.Code }
func (p *page) IsProcess() bool  { return p.Kind == genchoice.Process }
func (p *page) IsStandard() bool { return p.Kind == genchoice.Standard }

// steps reads steps from items. With list lines, the list items are the
// steps (deeper ones sub-points), text before the list the introduction,
// text inside it sub-points and text after it notes. Without, every
// sentence is a step.
func (p *page) steps(items []item) {
	first, last, base, numbers := -1, -1, 1<<30, 0
	for i, it := range items {
		if it.list() && first < 0 {
			first = i
		}
		if it.list() {
			last, base = i, min(base, it.indent)
		}
		if it.kind == kNumber {
			numbers++
		}
	}
	p.Ordered = numbers > 0 || first < 0 || p.Kind != genchoice.Standard
	for i, it := range items {
		s, has := &step{}, len(p.Steps) > 0 // s: the last step, or scratch
		if has {
			s = &p.Steps[len(p.Steps)-1]
		}
		switch {
		case it.kind == kCheck && has && s.Check == "":
			s.Check = it.text
		case it.kind == kCheck:
			p.Notes = append(p.Notes, "Check: "+it.text)
		case it.kind == kCode && has:
			s.Code = append(s.Code, block{Lang: it.lang, Code: it.code})
		case it.kind == kCode:
			p.Codes = append(p.Codes, block{Lang: it.lang, Code: it.code})
		case it.list() && has && it.indent > base:
			s.Subs = append(s.Subs, it.text)
		case it.list():
			p.Steps = append(p.Steps, step{Title: it.text})
		case first < 0 && it.kind == kText:
			for _, t := range sentences(it.text) {
				p.Steps = append(p.Steps, step{Title: t})
			}
		case i < first || first < 0 && !has:
			p.Intro = append(p.Intro, it.text)
		case i < last:
			s.Subs = append(s.Subs, it.text)
		default:
			p.Notes = append(p.Notes, it.text)
		}
	}
}

// walkthrough makes every code block a step explained by the text just
// before it; text after the last block is notes. Without code, the content
// is read as steps (a JSON document is shown whole).
func (p *page) walkthrough(items []item, root *jnode) {
	var text []string
	for _, it := range items {
		switch n := len(p.Steps); {
		case it.kind == kCode:
			s := step{Title: fmt.Sprintf("Code block %d", n+1), Code: []block{{Lang: it.lang, Code: it.code}}}
			if d := decls(it.code); len(d) > 0 {
				s.Title = "Declare " + codes(d, 3)
			}
			if len(text) > 0 {
				s.Title, s.Subs = text[0], text[1:]
			}
			p.Steps, text = append(p.Steps, s), nil
		case it.kind == kCheck && n > 0 && len(text) == 0 && p.Steps[n-1].Check == "":
			p.Steps[n-1].Check = it.text
		case it.kind == kCheck:
			text = append(text, "Check: "+it.text)
		default:
			text = append(text, it.text)
		}
	}
	switch {
	case len(p.Steps) > 0:
		p.Notes = text
	case root != nil:
		p.Steps = []step{{Title: "The supplied JSON document", Code: []block{{Lang: "json", Code: root.pretty()}}}}
	default:
		p.steps(items)
	}
}

const modifiers = `(?:(?:export|default|public|private|protected|internal|static|async|abstract|final|sealed|override|virtual|readonly|partial)\s+)`

// reDecl finds declarations: a keyword (def, function, class, const, …)
// and a name, or modifiers, a type and a method name.
var reDecl = regexp.MustCompile(`(?m)^[ \t]*` + modifiers + `*(?:def|function\*?|func|fn|class|interface|enum|struct|record|trait|type|const|let|var|val)\s+([A-Za-z_$][\w$]*)|^[ \t]*` + modifiers + `+[\w<>\[\],.?]+\s+([A-Za-z_]\w*)\s*\(`)

// decls returns the names code declares, each once.
func decls(code string) []string {
	var out []string
	for _, m := range reDecl.FindAllStringSubmatch(code, 64) {
		if !slices.Contains(out, m[1]+m[2]) {
			out = append(out, m[1]+m[2])
		}
	}
	return out
}

// Decls is what the code of the steps declares.
func (p *page) Decls() []string {
	var code []string
	for _, s := range p.Steps {
		for _, b := range s.Code {
			code = append(code, b.Code)
		}
	}
	return decls(strings.Join(code, "\n"))
}

// Note explains a code block: its size and what it declares.
func (p *page) Note(b block) string {
	d, lines := decls(b.Code), plural(strings.Count(strings.TrimSpace(b.Code), "\n")+1, "line")
	s := "This block (" + lines + ") runs as written."
	switch {
	case p.Simple && len(d) > 0:
		return "This part sets up " + codes(d, 3) + "."
	case p.Simple:
		return "This part is " + lines + " of code."
	case len(d) > 0:
		s = "This block (" + lines + ") declares " + codes(d, 8) + "."
	}
	if p.Detailed {
		s += " Run or review it before the next step; if it fails, see Troubleshooting."
	}
	return s
}

// keep returns the first n of list, counting the others in left.
func keep[T any](list []T, n int, left *int) []T {
	if len(list) <= n {
		return list
	}
	*left += len(list) - n
	return list[:n]
}

func render(req core.GenerateRequest) string {
	o := normalize(req)
	p := &page{Kind: o.ContentType, Name: o.Name, Lang: langNames[o.Language], Tag: fenceTag(o.Language),
		Simple: o.DocStyle == genchoice.Simplified, Detailed: o.DocStyle == genchoice.Detailed, Ordered: true}
	text, cut := sanitize(req.Content, maxInputBytes)
	root, items := parseJSON(text), []item(nil)
	if root == nil {
		items, p.Left = parseText(text)
	} else if o.ContentType != genchoice.API {
		items, p.Left = jsonItems(root)
	}
	switch p.Cut = cut; o.ContentType {
	case genchoice.API:
		p.api(root, items)
	case genchoice.Code:
		p.walkthrough(items, root)
	default:
		p.steps(items)
	}
	p.Intro, p.Steps, p.API = keep(p.Intro, maxIntro, &p.Left), keep(p.Steps, maxSteps, &p.Left), keep(p.API, maxSteps, &p.Left)
	if p.Simple {
		p.Steps, p.API = keep(p.Steps, maxSimpleSteps, &p.Hidden), keep(p.API, maxSimpleSteps, &p.Hidden)
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if p.Simple {
			s.Title, s.Check, s.Subs = first(s.Title, 160), first(s.Check, 160), nil
		}
		if s.Check == "" && o.ContentType == genchoice.Process && p.Simple {
			s.Check = "Confirm it worked as expected."
		} else if s.Check == "" && o.ContentType == genchoice.Process {
			s.Check = "confirm “" + strings.TrimRight(textclip.Bytes(s.Title, 80), ".:;!") + "” is done and its result is as expected."
		}
	}
	var b strings.Builder
	if err := layout.Execute(&b, p); err != nil {
		panic(err)
	}
	return finish(b.String())
}

const truncNote = "_The generated document reached its size limit; the rest was left out._"

// finish collapses runs of blank lines outside code blocks and keeps the
// document within maxOutputBytes by cutting it at a blank line outside code
// blocks (so no block is left open) and saying so.
func finish(doc string) string {
	var b strings.Builder
	fence, blank, safe := "", true, 0
	for line := range strings.Lines(doc) {
		t := strings.TrimSpace(line)
		if fence == "" && t == "" {
			if blank {
				continue
			}
			line, safe = "\n", b.Len()
		}
		if run := t[:len(t)-len(strings.TrimLeft(t, "`"))]; len(run) >= 3 && fence == "" {
			fence = run
		} else if t == fence {
			fence = ""
		}
		if b.Len()+len(line) > maxOutputBytes-len(truncNote)-2 {
			return b.String()[:safe] + "\n" + truncNote + "\n"
		}
		b.WriteString(line)
		blank = t == "" && fence == ""
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
