package generate

import (
	"strings"
	"unicode"
)

// buildCode groups the content into walkthrough steps: each code block with
// the text just before it as its explanation. Text after the last block is
// notes. Content without code falls back to the general model.
func buildCode(p parsed, o opts) model {
	if p.json != nil {
		m := jsonModel(p.json)
		for _, s := range m.steps {
			if len(s.code) > 0 {
				return m
			}
		}
		// plain JSON data: show it, explain its shape
		var keys []string
		for _, k := range p.json.keys {
			keys = append(keys, ic(k))
			if len(keys) == 20 {
				break
			}
		}
		s := step{title: "The supplied JSON document", code: []item{{kind: kCode, lang: "json", code: p.json.pretty(maxCodeBytes)}}}
		switch {
		case p.json.kind == jArray:
			s.subs = append(s.subs, "An array of "+plural(len(p.json.vals)+p.json.more, "element")+".")
		case len(keys) > 0:
			s.subs = append(s.subs, "Top-level keys: "+strings.Join(keys, ", ")+".")
		}
		return model{steps: []step{s}, cut: p.cut || p.json.trunc || p.json.deep, omitted: p.json.more}
	}
	hasCode := false
	for _, it := range p.items {
		if it.kind == kCode {
			hasCode = true
			break
		}
	}
	if !hasCode {
		return buildModel(p, o)
	}
	m := model{cut: p.cut, omitted: p.dropped}
	var pending []string
	for _, it := range p.items {
		switch it.kind {
		case kCode:
			s := step{code: []item{it}}
			if len(pending) > 0 {
				s.title, s.subs = pending[0], pending[1:]
			}
			m.addStep(s)
			pending = nil
		case kCheck:
			if s := m.last(); s != nil && len(pending) == 0 && s.check == "" {
				s.check = it.text
			} else {
				pending = append(pending, "Check: "+it.text)
			}
		default:
			pending = append(pending, it.text)
		}
	}
	m.notes = append(m.notes, pending...)
	return m
}

func renderCode(w *md, o opts, m model) {
	lang := langName(o.lang)
	if o.simple() {
		w.p("How this code works, step by step.")
		w.h(2, "Steps")
		if len(m.steps) == 0 {
			w.p("No code or steps could be read from the supplied content.")
			return
		}
		limit := min(len(m.steps), maxSimpleSteps)
		for i, s := range m.steps[:limit] {
			marker := itoa(i+1) + ". "
			ind := strings.Repeat(" ", len(marker))
			title := codeStepTitle(s, i)
			if !w.add(marker + esc(firstSentence(title, 160)) + "\n") {
				return
			}
			for _, c := range s.code {
				w.add("\n")
				w.code(ind, codeTag(c, o), c.code)
				w.add(ind + esc(explainCode(analyze(c.code), o)) + "\n")
			}
			if s.check != "" {
				w.add("\n" + ind + "Check: " + esc(firstSentence(s.check, 160)) + "\n")
			}
			w.add("\n")
		}
		if rest := len(m.steps) - limit; rest > 0 {
			w.p(plural(rest, "more part") + " of the code " + map[bool]string{true: "is", false: "are"}[rest == 1] + " not shown here.")
		}
		if m.cut || m.omitted > 0 {
			w.p("Some of the supplied content was left out to keep this short.")
		}
		return
	}
	var all facts
	for _, s := range m.steps {
		for _, c := range s.code {
			all.merge(analyze(c.code))
		}
	}
	w.h(2, "Overview")
	writeIntro(w, m)
	blocks := 0
	for _, s := range m.steps {
		blocks += len(s.code)
	}
	ov := "This walkthrough explains **" + o.name + "** in " + plural(len(m.steps), "step") + " with " + plural(blocks, "code block")
	if lang != "" {
		ov += " of " + lang
	}
	ov += "."
	if len(all.decls) > 0 {
		ov += " It declares " + joinCode(all.decls, 8) + "."
	}
	w.p(ov)
	if o.detailed() {
		pre := []string{toolchain(o.lang)}
		if len(all.imports) > 0 {
			pre = append(pre, "Dependencies available to the code: "+joinCode(all.imports, 8)+".")
		}
		pre = append(pre, "Access to the project or repository the code belongs to.")
		writePrereqs(w, o, m, pre)
	}
	w.h(2, "Walkthrough")
	if len(m.steps) == 0 {
		w.p("No code or steps could be read from the supplied content.")
	}
	for i, s := range m.steps {
		if w.full {
			break
		}
		title := codeStepTitle(s, i)
		short := strings.TrimRight(clipRunes(oneLine(title), 80), ":;,")
		w.h(3, "Step "+itoa(i+1)+": "+short)
		if s.title != "" && clipRunes(oneLine(title), 80) != title {
			w.p(s.title)
		}
		for _, sub := range s.subs {
			w.p(sub)
		}
		for _, c := range s.code {
			w.code("", codeTag(c, o), c.code)
			w.p(explainCode(analyze(c.code), o))
		}
		if s.check != "" {
			w.p("Check: " + s.check)
		}
	}
	if o.detailed() {
		subject := "the code"
		if len(all.decls) > 0 {
			subject = ic(all.decls[0])
		}
		w.h(2, "Edge cases")
		w.ul([]string{
			"Empty, missing or malformed input to " + subject + ".",
			"Very large inputs or slow dependencies: bound sizes and set timeouts.",
			"Failures of I/O, the network or the runtime: handle each error explicitly instead of ignoring it.",
			"Concurrent use: check whether shared state needs synchronisation.",
		})
		w.h(2, "Troubleshooting")
		ts := []string{"Syntax or compile errors: check the " + nonEmpty(lang, "language") + " version in use and that every block was copied completely."}
		if len(all.imports) > 0 {
			ts = append(ts, "Missing module or import errors: install or reference "+joinCode(all.imports, 8)+".")
		}
		ts = append(ts, "Unexpected output: run the steps one at a time and compare each result with its explanation above.")
		w.ul(ts)
	}
	writeNotes(w, o, m, false)
}

func codeStepTitle(s step, i int) string {
	if s.title != "" {
		return s.title
	}
	for _, c := range s.code {
		f := analyze(c.code)
		if f.comment != "" {
			return f.comment
		}
		if len(f.decls) > 0 {
			return "Declare " + joinCode(f.decls, 3)
		}
	}
	return "Code block " + itoa(i+1)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func toolchain(lang string) string {
	switch lang {
	case "typescript":
		return "A working TypeScript toolchain: Node.js and the TypeScript compiler (tsc)."
	case "javascript":
		return "A working JavaScript runtime: Node.js or a browser."
	case "python":
		return "A working Python 3 interpreter and pip."
	case "java":
		return "A working Java toolchain: a JDK and Maven or Gradle."
	case "csharp":
		return "A working C# toolchain: the .NET SDK (dotnet)."
	}
	return "The tools and runtime the code needs, installed and on the PATH."
}

// facts is what a quick, line-based reading of a code block finds.
type facts struct {
	lines   int
	decls   []string // declared functions, classes, types, variables
	imports []string // imported modules
	comment string   // first comment
}

func (f *facts) merge(g facts) {
	f.lines += g.lines
	for _, d := range g.decls {
		f.decls = appendUnique(f.decls, d, 16)
	}
	for _, d := range g.imports {
		f.imports = appendUnique(f.imports, d, 16)
	}
}

func appendUnique(list []string, s string, max int) []string {
	if s == "" || len(list) >= max {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

var modifiers = map[string]bool{
	"export": true, "default": true, "public": true, "private": true, "protected": true, "internal": true,
	"static": true, "async": true, "abstract": true, "final": true, "sealed": true, "override": true,
	"virtual": true, "readonly": true, "partial": true, "declare": true, "unsafe": true, "extern": true, "pub": true,
	"synchronized": true, "@override": true,
}

// analyze reads declarations, imports and the first comment of code.
func analyze(code string) facts {
	var f facts
	lines := strings.Split(code, "\n")
	if len(lines) > 2000 {
		lines = lines[:2000]
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		f.lines++
		if c, ok := commentText(t); ok {
			if f.comment == "" && c != "" {
				f.comment = clipRunes(c, 120)
			}
			continue
		}
		if imp := importOf(t); imp != "" {
			for _, part := range strings.Split(imp, ",") {
				f.imports = appendUnique(f.imports, strings.TrimSpace(part), 16)
			}
			continue
		}
		if d := declOf(t); d != "" {
			f.decls = appendUnique(f.decls, d, 16)
		}
	}
	return f
}

func commentText(t string) (string, bool) {
	for _, p := range []string{"///", "//", "--", "/**", "/*", "*/", "* ", `"""`, "'''", "#"} {
		if strings.HasPrefix(t, p) {
			if p == "#" && (strings.HasPrefix(t, "#include") || strings.HasPrefix(t, "#!") || strings.HasPrefix(t, "#define") || strings.HasPrefix(t, "#region") || strings.HasPrefix(t, "#endregion") || strings.HasPrefix(t, "#pragma")) {
				return "", false
			}
			c := strings.TrimSpace(strings.Trim(strings.TrimSpace(t[len(p):]), "*/\"'#"))
			return c, true
		}
	}
	if t == "*" {
		return "", true
	}
	return "", false
}

func importOf(t string) string {
	unq := func(s string) string {
		s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), ";"))
		return strings.Trim(s, `"'<>`+"`")
	}
	switch {
	case strings.HasPrefix(t, "import "):
		rest := strings.TrimSpace(t[len("import "):])
		if i := strings.LastIndex(rest, " from "); i >= 0 {
			return unq(rest[i+len(" from "):])
		}
		rest = strings.TrimPrefix(rest, "static ")
		if strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, "type ") {
			return ""
		}
		if i := strings.Index(rest, " as "); i >= 0 {
			rest = rest[:i]
		}
		return unq(rest)
	case strings.HasPrefix(t, "from ") && strings.Contains(t, " import "):
		return unq(t[len("from "):strings.Index(t, " import ")])
	case strings.HasPrefix(t, "using ") && strings.HasSuffix(t, ";") && !strings.Contains(t, "(") && !strings.Contains(t, "="):
		return unq(t[len("using "):])
	case strings.HasPrefix(t, "#include"):
		return unq(t[len("#include"):])
	case strings.Contains(t, "require("):
		i := strings.Index(t, "require(") + len("require(")
		j := strings.IndexByte(t[i:], ')')
		if j < 0 {
			return ""
		}
		return unq(t[i : i+j])
	}
	return ""
}

// declOf returns the name a line declares, if it declares one.
func declOf(t string) string {
	words := strings.Fields(t)
	i := 0
	for i < len(words) && modifiers[strings.ToLower(words[i])] {
		i++
	}
	if i >= len(words) {
		return ""
	}
	next := func() string {
		if i+1 < len(words) {
			return ident(words[i+1])
		}
		return ""
	}
	switch words[i] {
	case "def", "function", "function*", "fn", "fun":
		return next()
	case "func":
		if i+1 < len(words) && strings.HasPrefix(words[i+1], "(") {
			if j := strings.Index(t, ")"); j >= 0 {
				return ident(strings.TrimSpace(t[j+1:]))
			}
			return ""
		}
		return next()
	case "class", "interface", "enum", "struct", "record", "trait", "module", "namespace":
		return next()
	case "type":
		if strings.Contains(t, "=") || strings.Contains(t, "struct") || strings.Contains(t, "interface") || len(words) >= 3 {
			return next()
		}
	case "const", "let", "var", "val":
		if strings.Contains(t, "=") {
			return next()
		}
	}
	// Java/C#-style method: modifiers, a return type, name(...)
	if i > 0 && strings.Contains(t, "(") && !strings.Contains(t, "=") {
		before := t[:strings.Index(t, "(")]
		ws := strings.Fields(before)
		if len(ws) >= 2 {
			return ident(ws[len(ws)-1])
		}
	}
	return ""
}

// ident returns the identifier w starts with.
func ident(w string) string {
	end := 0
	for i, r := range w {
		if r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			end = i + len(string(r))
			continue
		}
		break
	}
	return w[:end]
}

func joinCode(list []string, max int) string {
	var parts []string
	for i, s := range list {
		if i == max {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, ic(s))
	}
	return strings.Join(parts, ", ")
}

// explainCode describes a code block in o's style.
func explainCode(f facts, o opts) string {
	if o.simple() {
		if len(f.decls) > 0 {
			return "This part sets up " + joinCode(f.decls, 3) + "."
		}
		return "This part is " + plural(f.lines, "line") + " of code."
	}
	var parts []string
	if len(f.decls) > 0 {
		parts = append(parts, "declares "+joinCode(f.decls, 8))
	}
	if len(f.imports) > 0 {
		parts = append(parts, "uses "+joinCode(f.imports, 8))
	}
	s := "This block (" + plural(f.lines, "line") + ")"
	if len(parts) > 0 {
		s += " " + strings.Join(parts, " and ") + "."
	} else {
		s += " runs as written."
	}
	if f.comment != "" {
		s += " Its comment says: “" + f.comment + "”."
	}
	if o.detailed() {
		s += " Run or review it before the next step; if it fails, see Troubleshooting."
	}
	return s
}

// looksLikeCode reports whether unfenced lines are code rather than prose:
// most lines carry code punctuation or start with a declaration keyword.
func looksLikeCode(lines []string) bool {
	n, score, strong := 0, 0, 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		n++
		s := codeSignal(t)
		if s > 0 {
			score++
		}
		if s > 1 {
			strong++
		}
	}
	if n == 0 || strong == 0 {
		return false
	}
	if n == 1 {
		return strong == 1 && score == 1
	}
	return score*10 >= n*6
}

// codeSignal rates one line: 0 prose, 1 code-like, 2 clearly code.
func codeSignal(t string) int {
	w := strings.ToLower(firstWord(t))
	switch w {
	case "def", "class", "import", "function", "const", "let", "var", "return", "func", "package",
		"public", "private", "protected", "using", "#include", "export", "async", "await", "try:", "except", "elif", "fn", "interface", "}", "};", "})", "});":
		if strings.ContainsAny(t, "(){};=:") || w == "}" || w == "};" || w == "})" || w == "});" {
			return 2
		}
	case "from":
		if strings.Contains(t, " import ") {
			return 2
		}
	}
	end := t[len(t)-1]
	if strings.HasSuffix(t, "=>") || strings.Contains(t, " => ") || strings.Contains(t, ":=") || strings.Contains(t, "==") || strings.Contains(t, "();") {
		return 2
	}
	if end == ';' || end == '{' || end == '}' {
		if strings.ContainsAny(t, "(=") || len(t) <= 3 {
			return 2
		}
		return 1
	}
	if end == ')' && strings.Contains(t, "(") && !strings.Contains(t, " ") {
		return 2
	}
	if end == ':' && (w == "if" || w == "for" || w == "while" || w == "else:" || w == "with") {
		return 2
	}
	if end == '.' || end == '!' || end == '?' {
		return 0
	}
	if strings.Contains(t, " = ") || strings.HasPrefix(t, "//") || (strings.Contains(t, "(") && strings.Contains(t, ")") && !strings.Contains(t, " ")) {
		return 1
	}
	return 0
}
