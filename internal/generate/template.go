package generate

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
)

// Template is the offline provider: a deterministic function of the request
// (no randomness, no clock, no network). It parses the supplied content and
// renders a Markdown document whose sections follow contentType and docStyle;
// see the package documentation.
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

// opts is a normalised request.
type opts struct {
	name  string
	ctype string // code, standard, api, process
	style string // technical, simplified, detailed
	lang  string // typescript, javascript, python, java, csharp, other
}

func (o opts) simple() bool   { return o.style == "simplified" }
func (o opts) detailed() bool { return o.style == "detailed" }

func normalize(req core.GenerateRequest) opts {
	pick := func(v, def string, allowed ...string) string {
		v = strings.ToLower(strings.TrimSpace(v))
		for _, a := range allowed {
			if v == a {
				return v
			}
		}
		return def
	}
	name, _ := sanitize(req.Name, 4*maxTitleRunes)
	name = clipRunes(oneLine(name), maxTitleRunes)
	if name == "" {
		name = "Procedure"
	}
	return opts{
		name:  name,
		ctype: pick(req.ContentType, "standard", "code", "standard", "api", "process"),
		style: pick(req.DocStyle, "technical", "technical", "simplified", "detailed"),
		lang:  pick(req.Language, "other", "typescript", "javascript", "python", "java", "csharp", "other"),
	}
}

// fenceTag returns the info string of code fences for a language ("" for
// other).
func fenceTag(lang string) string {
	switch lang {
	case "typescript", "javascript", "python", "java", "csharp":
		return lang
	}
	return ""
}

// langName returns the display name of a language ("" for other).
func langName(lang string) string {
	switch lang {
	case "typescript":
		return "TypeScript"
	case "javascript":
		return "JavaScript"
	case "python":
		return "Python"
	case "java":
		return "Java"
	case "csharp":
		return "C#"
	}
	return ""
}

// render is the template provider.
func render(req core.GenerateRequest) string {
	o := normalize(req)
	p := parseContent(req.Content)
	w := newMD()
	w.h(1, esc(o.name))
	switch o.ctype {
	case "process":
		renderProcess(w, o, buildModel(p, o))
	case "api":
		renderAPI(w, o, buildAPI(p))
	case "code":
		renderCode(w, o, buildCode(p, o))
	default:
		renderStandard(w, o, buildModel(p, o))
	}
	return w.String()
}

// ---- model ----

type step struct {
	group string // heading the step follows in the source
	title string
	subs  []string
	check string
	code  []item
}

type model struct {
	intro   []string
	steps   []step
	bullets bool // steps came from a bulleted (unordered) list
	notes   []string
	prereqs []string
	codes   []item // code not attached to a step
	omitted int    // steps not kept
	cut     bool   // the content was longer than considered
}

func (m *model) addStep(s step) {
	if len(m.steps) >= maxSteps {
		m.omitted++
		return
	}
	m.steps = append(m.steps, s)
}

func (m *model) last() *step {
	if len(m.steps) == 0 {
		return nil
	}
	return &m.steps[len(m.steps)-1]
}

func (m *model) attachCheck(t string) {
	if s := m.last(); s != nil && s.check == "" {
		s.check = t
		return
	}
	m.notes = append(m.notes, "Check: "+t)
}

func (m *model) attachCode(it item) {
	if s := m.last(); s != nil {
		s.code = append(s.code, it)
		return
	}
	m.codes = append(m.codes, it)
}

func buildModel(p parsed, o opts) model {
	var m model
	if p.json != nil {
		m = jsonModel(p.json)
	} else {
		m = textModel(p.items)
	}
	m.cut = m.cut || p.cut
	m.omitted += p.dropped
	return m
}

// textModel turns parsed text into intro, steps and notes. With list lines,
// the list items are the steps (deeper ones their sub-points), text before
// the list is the introduction and text after it notes. Without, each
// sentence is a step.
func textModel(items []item) model {
	var m model
	first, last, base := -1, -1, 1<<30
	numbers := 0
	for i, it := range items {
		if it.isList() {
			if first < 0 {
				first = i
			}
			last = i
			base = min(base, it.indent)
			if it.kind == kNumber {
				numbers++
			}
		}
	}
	group := ""
	newStep := func(t string) {
		m.addStep(step{group: group, title: t})
		group = ""
	}
	for i, it := range items {
		switch it.kind {
		case kCheck:
			m.attachCheck(it.text)
		case kCode:
			m.attachCode(it)
		case kHeading:
			if first >= 0 && i > last {
				m.notes = append(m.notes, it.text)
			} else {
				group = it.text
			}
		case kNumber, kBullet:
			if s := m.last(); s != nil && it.indent > base && i > first {
				s.subs = append(s.subs, it.text)
			} else {
				newStep(it.text)
			}
		case kText:
			switch {
			case first < 0:
				for _, sn := range splitSentences(it.text) {
					newStep(sn)
				}
			case i < first:
				m.intro = append(m.intro, it.text)
			case i < last:
				if s := m.last(); s != nil {
					s.subs = append(s.subs, it.text)
				}
			default:
				m.notes = append(m.notes, it.text)
			}
		}
	}
	if group != "" {
		m.notes = append(m.notes, group)
	}
	m.bullets = first >= 0 && numbers == 0
	return m
}

// jsonModel reads steps from a JSON array (of strings or of objects with
// step/name/title and description/check/code), or from an object's "steps"
// array, with description, prerequisites and notes from the object's keys.
func jsonModel(root *jnode) model {
	var m model
	arr := root
	if root.kind == jObject {
		arr = nil
		used := map[string]bool{}
		if v, k := root.get("steps", "procedure", "tasks", "actions", "instructions", "items", "checklist"); v != nil && v.kind == jArray {
			arr, used[k] = v, true
		}
		if v, k := root.get("description", "summary", "overview", "purpose", "goal", "about", "intro", "introduction"); v != nil {
			m.intro, used[k] = append(m.intro, v.text(maxItemText)), true
		}
		if v, k := root.get("prerequisites", "requirements", "requires", "before", "prereqs"); v != nil {
			m.prereqs, used[k] = append(m.prereqs, texts(v)...), true
		}
		if v, k := root.get("notes", "note", "warnings", "warning", "caveats", "remarks"); v != nil {
			m.notes, used[k] = append(m.notes, texts(v)...), true
		}
		if v, k := root.get("name", "title"); v != nil && v.isScalar() {
			used[k] = true
		}
		for i, k := range root.keys {
			if used[k] {
				continue
			}
			v := root.vals[i]
			line := k + ": " + v.text(maxItemText)
			if arr != nil {
				m.notes = append(m.notes, line)
			} else {
				m.addStep(step{title: line})
			}
		}
		if root.more > 0 {
			m.omitted += root.more
		}
		m.cut = m.cut || root.trunc || root.deep
	}
	if arr != nil {
		for _, el := range arr.vals {
			switch {
			case el.isScalar():
				if t := el.text(maxItemText); t != "" {
					m.addStep(step{title: t})
				}
			case el.kind == jObject:
				m.addStep(stepFromObject(el))
			default:
				m.addStep(step{title: el.text(maxItemText)})
			}
		}
		m.omitted += arr.more
		m.cut = m.cut || arr.trunc || arr.deep
	}
	return m
}

func stepFromObject(o *jnode) step {
	var s step
	used := map[string]bool{}
	for _, names := range [][]string{{"step", "name", "title", "action", "task", "do", "summary", "label"}} {
		for _, n := range names {
			if v, k := o.get(n); v != nil && v.kind == jString && strings.TrimSpace(v.val) != "" {
				s.title, used[k] = v.text(maxItemText), true
				break
			}
		}
	}
	if v, k := o.get("description", "details", "detail", "desc", "text", "instructions", "how", "body"); v != nil {
		used[k] = true
		if t := v.text(maxItemText); s.title == "" {
			s.title = t
		} else if t != "" {
			s.subs = append(s.subs, t)
		}
	}
	if v, k := o.get("check", "verify", "verification", "expected", "expect", "validation", "outcome", "result"); v != nil {
		s.check, used[k] = v.text(maxItemText), true
	}
	lang := ""
	if v, k := o.get("language", "lang"); v != nil && v.isScalar() {
		lang, used[k] = infoTag(v.val), true
	}
	if v, k := o.get("code", "command", "commands", "cmd", "snippet", "script", "shell"); v != nil {
		used[k] = true
		body := v.str()
		if !v.isScalar() {
			body = strings.Join(texts(v), "\n")
		}
		s.code = append(s.code, item{kind: kCode, lang: lang, code: clipCode(body)})
	}
	if v, k := o.get("substeps", "steps", "subtasks"); v != nil {
		s.subs, used[k] = append(s.subs, texts(v)...), true
	}
	for i, k := range o.keys {
		if used[k] {
			continue
		}
		if s.title == "" && o.vals[i].isScalar() {
			s.title, used[k] = o.vals[i].text(maxItemText), true
			continue
		}
		s.subs = append(s.subs, k+": "+o.vals[i].text(maxItemText))
	}
	if s.title == "" {
		s.title = o.text(maxItemText)
	}
	return s
}

// texts returns the one-line texts of an array's elements, or of a scalar.
func texts(v *jnode) []string {
	if v == nil {
		return nil
	}
	if v.kind != jArray {
		if t := v.text(maxItemText); t != "" {
			return []string{t}
		}
		return nil
	}
	var out []string
	for _, el := range v.vals {
		if el.kind == jObject {
			s := stepFromObject(el)
			out = append(out, s.title)
			continue
		}
		if t := el.text(maxItemText); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// infoTag returns a safe code-fence info string: the first word of s,
// letters, digits and +#._- only.
func infoTag(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	t := f[0]
	if len(t) > 24 {
		return ""
	}
	for _, r := range t {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("+#._-", r)) || r > unicode.MaxASCII {
			return ""
		}
	}
	return strings.ToLower(t)
}

// ---- shared sections ----

// stepTitle returns the text a step is shown with in o's style.
func stepTitle(s step, o opts) string {
	if o.simple() {
		return firstSentence(s.title, 160)
	}
	if s.group != "" {
		return "**" + strings.TrimRight(s.group, ":") + ":** " + s.title
	}
	return s.title
}

// writeSteps renders steps as a list. Ordered lists are numbered; checks
// adds a "Check:" line after every step.
func writeSteps(w *md, o opts, steps []step, ordered, checks bool) {
	limit := len(steps)
	if o.simple() {
		limit = min(limit, maxSimpleSteps)
	}
	for i, s := range steps[:limit] {
		marker := "- "
		if ordered {
			marker = itoa(i+1) + ". "
		}
		ind := strings.Repeat(" ", len(marker))
		var b strings.Builder
		b.WriteString(marker + esc(stepTitle(s, o)) + "\n")
		if !o.simple() {
			for _, sub := range s.subs {
				b.WriteString(ind + "- " + esc(sub) + "\n")
			}
		}
		if !w.add(b.String()) {
			return
		}
		sep := "\n" // before the next block of the item
		for _, c := range s.code {
			w.add(sep)
			w.code(ind, codeTag(c, o), c.code)
			sep = ""
		}
		if checks || s.check != "" {
			w.add(sep + ind + "Check: " + checkFor(s, o) + "\n")
			sep = "\n"
		}
		if len(s.code) > 0 || checks || s.check != "" {
			w.add(sep) // a blank line between items with blocks
		}
	}
	w.add("\n")
	if rest := len(steps) - limit; rest > 0 {
		w.p(plural(rest, "more step") + " in the source " + map[bool]string{true: "is", false: "are"}[rest == 1] + " not shown here.")
	}
}

// codeTag is the fence info string of a code item: its own, else the
// request's language.
func codeTag(c item, o opts) string {
	if t := infoTag(c.lang); t != "" {
		return t
	}
	return fenceTag(o.lang)
}

// checkFor returns the check of a step: the one the source gave, else one
// derived from the step's leading verb.
func checkFor(s step, o opts) string {
	if s.check != "" {
		if o.simple() {
			return firstSentence(s.check, 160)
		}
		return s.check
	}
	outcome := outcomeOf(s.title)
	if o.simple() {
		return upperFirst(outcome) + "."
	}
	what := strings.TrimRight(clipRunes(oneLine(s.title), 80), ".:;!")
	return "confirm “" + what + "” is done — " + outcome + "."
}

// outcomeOf phrases what "done" means for a step starting with a verb.
func outcomeOf(title string) string {
	w := strings.ToLower(strings.TrimFunc(firstWord(title), func(r rune) bool { return !unicode.IsLetter(r) }))
	switch w {
	case "deploy", "release", "ship", "publish", "roll", "rollout", "promote":
		return "the new version is live and healthy, with no new errors"
	case "run", "execute", "start", "launch", "trigger", "invoke", "call", "restart", "reboot":
		return "it completed (or is running) without errors"
	case "test", "verify", "check", "validate", "confirm", "ensure", "review", "inspect", "audit", "monitor", "compare":
		return "the result matches what is expected; record any difference"
	case "remove", "delete", "revoke", "disable", "stop", "uninstall", "drop", "deactivate", "retire", "close", "archive", "clean":
		return "it is no longer present or active"
	case "create", "add", "generate", "install", "write", "make", "build", "set", "setup", "provision", "register", "open", "initialize", "initialise", "init", "prepare", "draft":
		return "the result exists and is usable"
	case "configure", "update", "change", "edit", "rotate", "upgrade", "enable", "migrate", "apply", "replace", "rename", "move", "assign", "grant", "merge", "fix":
		return "the change is in effect"
	case "send", "notify", "email", "inform", "tell", "announce", "share", "submit", "request", "ask", "escalate":
		return "the recipients have received it"
	case "backup", "back", "copy", "export", "save", "record", "document", "log", "note", "download", "upload", "store", "snapshot":
		return "the copy or record exists and is complete"
	case "wait", "pause":
		return "the expected condition has been reached"
	}
	return "its result is as expected"
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// writeNotes renders the Notes section: notes, stray code, and what was
// left out. always writes it even when empty.
func writeNotes(w *md, o opts, m model, always bool) {
	var lines []string
	lines = append(lines, m.notes...)
	if m.omitted > 0 {
		lines = append(lines, plural(m.omitted, "further item")+" of the supplied content "+map[bool]string{true: "was", false: "were"}[m.omitted == 1]+" left out (limit reached).")
	}
	if m.cut {
		lines = append(lines, "The supplied content was longer than the generator reads; only its beginning was used.")
	}
	if len(lines) == 0 && len(m.codes) == 0 && !always {
		return
	}
	w.h(2, "Notes")
	if len(lines) == 0 && len(m.codes) == 0 {
		w.p("No further notes in the supplied content.")
		return
	}
	w.ul(lines)
	for _, c := range m.codes {
		w.code("", codeTag(c, o), c.code)
	}
}

func writePrereqs(w *md, o opts, m model, defaults []string) {
	w.h(2, "Prerequisites")
	w.ul(append(append([]string{}, m.prereqs...), defaults...))
}

func writeIntro(w *md, m model) {
	for _, t := range m.intro {
		w.p(t)
	}
}

// ---- process ----

func renderProcess(w *md, o opts, m model) {
	n := len(m.steps)
	if o.simple() {
		if len(m.intro) > 0 {
			w.p(firstSentence(m.intro[0], 200))
		}
		w.p("Follow these steps in order. Do the check after each step before you go on.")
		w.h(2, "Steps")
		writeProcessSteps(w, o, m)
		if m.cut || m.omitted > 0 {
			w.p("Some of the supplied content was left out to keep this short.")
		}
		return
	}
	w.h(2, "Overview")
	writeIntro(w, m)
	w.p("This procedure covers **" + o.name + "** in " + plural(n, "step") + ". Perform the steps in order and confirm each step's check before starting the next one.")
	if o.detailed() {
		writePrereqs(w, o, m, []string{
			"Access and permissions for every system the steps touch.",
			"Enough time to finish all " + plural(n, "step") + " without interruption.",
			"A way to undo or roll back each change, and someone to escalate to.",
		})
	}
	w.h(2, "Steps")
	writeProcessSteps(w, o, m)
	if o.detailed() {
		w.h(2, "Edge cases")
		w.ul([]string{
			"A step fails part-way: stop; do not start the next step until its check passes.",
			"The procedure is interrupted: resume from the first step whose check does not pass.",
			"A step was already done (for example on a re-run): if its check passes, skip it.",
			"The situation differs from what a step assumes: stop and escalate rather than improvise.",
		})
		w.h(2, "Troubleshooting")
		var lines []string
		for i, s := range m.steps {
			if i == 5 {
				break
			}
			lines = append(lines, "Step "+itoa(i+1)+" ("+clipRunes(oneLine(s.title), 60)+") fails its check: find the cause, fix it, and repeat step "+itoa(i+1)+" before going on.")
		}
		lines = append(lines,
			"A check cannot be performed: note what is missing and escalate before continuing.",
			"Something was changed by mistake: roll it back, then restart from the last step whose check passed.")
		w.ul(lines)
	}
	writeNotes(w, o, m, false)
}

func writeProcessSteps(w *md, o opts, m model) {
	if len(m.steps) == 0 {
		w.p("No steps could be read from the supplied content. Add the steps of " + o.name + " here, each with the check that shows it is done.")
		return
	}
	writeSteps(w, o, m.steps, true, true)
}

// ---- standard ----

func renderStandard(w *md, o opts, m model) {
	section := "Steps"
	if m.bullets {
		section = "Guidelines"
	}
	if o.simple() {
		if len(m.intro) > 0 {
			w.p(firstSentence(m.intro[0], 200))
		} else {
			w.p("A short guide to " + o.name + ".")
		}
		w.h(2, section)
		writeStandardSteps(w, o, m)
		if m.cut || m.omitted > 0 {
			w.p("Some of the supplied content was left out to keep this short.")
		}
		return
	}
	w.h(2, "Overview")
	writeIntro(w, m)
	w.p("This guide covers **" + o.name + "**: " + plural(len(m.steps), strings.ToLower(strings.TrimSuffix(section, "s"))) + ".")
	if o.detailed() {
		writePrereqs(w, o, m, []string{
			"Familiarity with the context of " + o.name + ".",
			"Access to the systems and documents the guide refers to.",
		})
	}
	w.h(2, section)
	writeStandardSteps(w, o, m)
	if o.detailed() {
		w.h(2, "Edge cases")
		w.ul([]string{
			"The situation is not covered by this guide: stop and ask the owner of " + o.name + ".",
			"Two items conflict: the more specific item wins; record the conflict in Notes.",
			"An item cannot be followed as written (missing access, changed system): do not work around it silently; report it.",
		})
		w.h(2, "Troubleshooting")
		w.ul([]string{
			"The result differs from what the guide describes: repeat the last item, then compare with the guide line by line.",
			"A term or identifier is unclear: look it up in the source system; this guide keeps names exactly as supplied.",
			"The guide is out of date: update it and tell its owner.",
		})
	}
	writeNotes(w, o, m, true)
}

func writeStandardSteps(w *md, o opts, m model) {
	if len(m.steps) == 0 {
		w.p("No steps or guidelines could be read from the supplied content.")
		return
	}
	writeSteps(w, o, m.steps, !m.bullets, false)
}
