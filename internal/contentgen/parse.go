package contentgen

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/procsvc/procsvc/internal/textclip"
)

// Bounds of the template provider: content beyond them is not read.
const (
	maxInputBytes   = 64 << 10 // content bytes read
	maxOutputBytes  = 64 << 10 // document size
	maxLines        = 4000     // content lines read
	maxSteps        = 200      // steps (or endpoints) kept
	maxSimpleSteps  = 10       // steps (or endpoints) shown when simplified
	maxItemText     = 2000     // bytes of a line of text
	maxIntro        = 10       // lines of introduction kept
	maxTitleRunes   = 200      // runes of the title
	maxJSONDepth    = 32       // JSON nesting kept
	maxJSONChildren = 200      // members or elements kept per JSON container
	maxCodeBytes    = 16 << 10 // bytes of a code block
)

// sanitize returns at most max bytes of s as valid UTF-8, with \r\n and \r
// turned into \n and control characters other than \n and \t removed.
func sanitize(s string, max int) (out string, cut bool) {
	if cut = len(s) > max; cut {
		for i := max; i > max-utf8.UTFMax && i > 0; i-- {
			if utf8.RuneStart(s[i]) { // cut before a split rune
				max = i
				break
			}
		}
		s = s[:max]
	}
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(strings.ToValidUTF8(s, "\uFFFD"))
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			return -1
		}
		return r
	}, s), cut
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipCode cuts a code block to maxCodeBytes at a line end.
func clipCode(code string) string {
	if len(code) <= maxCodeBytes {
		return code
	}
	return code[:strings.LastIndexByte(code[:maxCodeBytes], '\n')+1] + "…"
}

// sentences splits s after ".", "!" or "?" followed by a space and an
// upper-case letter or digit.
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i+2 < len(s); i++ {
		if strings.IndexByte(".!?", s[i]) >= 0 && s[i+1] == ' ' {
			if r, _ := utf8.DecodeRuneInString(s[i+2:]); unicode.IsUpper(r) || unicode.IsDigit(r) {
				out, start = append(out, s[start:i+1]), i+2
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

type kind int

const (
	kText    kind = iota
	kHeading      // "# text"
	kNumber       // "1. text", "2) text", "Step 3: text"
	kBullet       // "- text", "* text", "+ text", "• text"
	kCheck        // "Check: text", "Verify: text", "Expected: text"
	kCode         // a fenced code block, or lines that look like code
)

// item is a line, or a code block, of the content.
type item struct {
	kind       kind
	text       string
	indent     int
	lang, code string
}

func (it item) list() bool { return it.kind == kNumber || it.kind == kBullet }

var (
	reFence   = regexp.MustCompile("^(`{3,}|~{3,})\\s*([^`\\s]*)[^`]*$")
	reHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)[\s#]*$`)
	reList    = regexp.MustCompile(`^(?:(\d{1,4}[.)]|(?i:step)\s*\d+\s*[.):\-–—]?)|[-*+•])\s+(?:\[[ xX]\]\s+)?(.+)$`)
	reCheck   = regexp.MustCompile(`^(?i:check|verify|verification|expected|expect)\s*:\s*(.+)$`)
	// A code line: a closing bracket, a keyword with code punctuation, an
	// assignment or call ending in ; or {, => or :=, or a bare call.
	reCode = regexp.MustCompile(`^[})\]]|^(?:def|class|import|from|return|func|function|const|let|var|package|public|private|protected|using|if|for|while|else|try|catch|#include)\b.*[(){}=:;]|[(=].*[;{]$|=>|:=|^[\w.$]+\(.*\)$`)
)

// parseText reads at most maxLines lines (left counts the others) into
// items. A paragraph whose every line looks like code is a code block; a
// paragraph's other lines are one item each.
func parseText(s string) (items []item, left int) {
	lines := strings.Split(s, "\n")
	if len(lines) > maxLines {
		left, lines = len(lines)-maxLines, lines[:maxLines]
	}
	var para []string
	flush := func() {
		code := len(para) > 0
		for _, l := range para {
			t := strings.TrimSpace(l)
			code = code && !strings.ContainsAny(t[len(t)-1:], ".!?") && reCode.MatchString(t)
		}
		if code {
			items = append(items, item{kind: kCode, code: clipCode(strings.Join(para, "\n"))})
		} else {
			for _, l := range para {
				items = append(items, item{text: textclip.Bytes(strings.TrimSpace(l), maxItemText)})
			}
		}
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		pad := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		if m := reFence.FindStringSubmatch(t); m != nil {
			flush()
			var body []string
			for i++; i < len(lines); i++ {
				if c := strings.TrimSpace(lines[i]); len(c) >= len(m[1]) && strings.Trim(c, m[1][:1]) == "" {
					break
				}
				body = append(body, strings.TrimPrefix(lines[i], pad))
			}
			items = append(items, item{kind: kCode, lang: m[2], code: clipCode(strings.Join(body, "\n"))})
			continue
		}
		it := item{text: t, indent: len(pad)}
		if m := reHeading.FindStringSubmatch(t); m != nil {
			it.kind, it.text = kHeading, m[1]
		} else if m := reList.FindStringSubmatch(t); m != nil {
			it.kind, it.text = kBullet, m[2]
			if m[1] != "" {
				it.kind = kNumber
			}
		}
		if m := reCheck.FindStringSubmatch(it.text); m != nil {
			it.kind, it.text = kCheck, m[1]
		}
		if it.kind == kText && strings.Trim(t, "-*_= ") != "" {
			para = append(para, strings.TrimRight(lines[i], " \t"))
		} else if flush(); it.kind != kText && it.text != "" { // else a blank line or a rule
			it.text = textclip.Bytes(oneLine(it.text), maxItemText)
			items = append(items, it)
		}
	}
	flush()
	return items, left
}

// jnode is a JSON value read within bounds: a container keeps its source
// text (raw), its key order (keys are "" in an array) and at most
// maxJSONChildren children (more counts the others), and none below
// maxJSONDepth (deep).
type jnode struct {
	obj, arr, quoted bool // quoted: a string
	val, raw         string
	keys             []string
	vals             []*jnode
	more             int
	deep             bool
}

// parseJSON reads s when it is one JSON object or array, walking
// encoding/json's token stream (no recursion, nothing kept beyond the
// bounds); else it returns nil.
func parseJSON(s string) *jnode {
	if t := strings.TrimSpace(s); t == "" || t[0] != '{' && t[0] != '[' || !json.Valid([]byte(t)) {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	type frame struct {
		n            *jnode // nil when the container is not kept
		start        int
		key          string
		obj, wantKey bool
	}
	var stack []frame
	var root *jnode
	for {
		tok, err := dec.Token()
		if err != nil {
			return root // io.EOF, as s is valid
		}
		d, delim := tok.(json.Delim)
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch {
		case delim && (d == '}' || d == ']'):
			if top.n != nil {
				top.n.raw = s[top.start:dec.InputOffset()]
			}
			stack = stack[:len(stack)-1]
			continue
		case top != nil && top.wantKey:
			top.key, top.wantKey = tok.(string), false
			continue
		case top != nil:
			top.wantKey = top.obj
		}
		n := &jnode{obj: d == '{', arr: d == '[', val: fmt.Sprint(tok)}
		if _, n.quoted = tok.(string); tok == nil {
			n.val = "null"
		}
		switch {
		case top == nil:
			root = n
		case top.n == nil || top.n.deep:
			n = nil
		case len(top.n.vals) == maxJSONChildren:
			top.n.more, n = top.n.more+1, nil
		default:
			top.n.keys, top.n.vals = append(top.n.keys, top.key), append(top.n.vals, n)
			n.deep = delim && len(stack) >= maxJSONDepth
		}
		if delim {
			stack = append(stack, frame{n: n, start: int(dec.InputOffset()) - 1, obj: d == '{', wantKey: d == '{'})
		}
	}
}

func normKey(k string) string {
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(k))
}

// get is the value of n under the first of names (as normKey gives them)
// that it has, or nil.
func (n *jnode) get(names ...string) *jnode {
	for _, want := range names {
		for i, k := range n.keys {
			if normKey(k) == want {
				return n.vals[i]
			}
		}
	}
	return nil
}

// str is the text of a scalar value of n under one of names, or "".
func (n *jnode) str(names ...string) string {
	if v := n.get(names...); v != nil && v.scalar() {
		return v.text(300)
	}
	return ""
}

func (n *jnode) scalar() bool { return !n.obj && !n.arr }

// text is n on one line and at most max bytes: a scalar's value, or JSON.
func (n *jnode) text(max int) string {
	return textclip.Bytes(oneLine(textclip.Bytes(cmp.Or(n.raw, n.val), 4*max)), max)
}

// pretty is n as indented JSON (a string as itself).
func (n *jnode) pretty() string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(n.raw), "", "  ") != nil {
		return clipCode(n.val)
	}
	return clipCode(b.String())
}

var (
	reStepsKey = regexp.MustCompile(`^(steps|procedure|tasks|actions|instructions|items|checklist)$`)
	reIntroKey = regexp.MustCompile(`^(description|summary|overview|purpose|goal|about|intro|introduction)$`)
	reTitleKey = regexp.MustCompile(`^(step|name|title|action|task|do|summary|label)$`)
	reCheckKey = regexp.MustCompile(`^(check|verify|verification|expected|expect|validation|outcome|result)$`)
	reCodeKey  = regexp.MustCompile(`^(code|command|commands|cmd|snippet|script|shell)$`)
)

// jsonItems reads JSON as the items of a text: an array's elements are
// numbered steps, as is an object's "steps" array, next to the object's
// description (the introduction) and other keys ("key: value" notes, or
// steps when there is no steps array). left counts elements not kept.
func jsonItems(n *jnode) (items []item, left int) {
	var rest []item
	list := n
	if n.obj {
		list = nil
		for i, k := range n.keys {
			switch v, nk := n.vals[i], normKey(k); {
			case reStepsKey.MatchString(nk) && v.arr && list == nil:
				list = v
			case reIntroKey.MatchString(nk):
				items = append(items, item{text: v.text(maxItemText)})
			case (nk != "name" && nk != "title") || !v.scalar():
				rest = append(rest, item{text: k + ": " + v.text(maxItemText)})
			}
		}
	}
	if list == nil {
		for i := range rest {
			rest[i].kind = kNumber
		}
		return append(items, rest...), n.more
	}
	for _, el := range list.vals {
		items = append(items, stepItems(el)...)
	}
	if left = n.more; list != n {
		left += list.more
	}
	return append(items, rest...), left
}

// stepItems reads a step: a value, or an object whose text under a title
// key (else its first text) is the step, its check and code keys its check
// and code, and its other keys sub-points.
func stepItems(v *jnode) []item {
	if !v.obj {
		return []item{{kind: kNumber, text: v.text(maxItemText)}}
	}
	title := -1
	for i, k := range v.keys {
		el, isTitle := v.vals[i], reTitleKey.MatchString(normKey(k))
		if el.quoted && strings.TrimSpace(el.val) != "" && (title < 0 || isTitle) {
			if title = i; isTitle {
				break
			}
		}
	}
	out := []item{{kind: kNumber, text: v.text(maxItemText)}}
	for i, k := range v.keys {
		switch el, nk := v.vals[i], normKey(k); {
		case i == title:
			out[0].text = el.text(maxItemText)
		case reCheckKey.MatchString(nk):
			out = append(out, item{kind: kCheck, text: el.text(maxItemText)})
		case reCodeKey.MatchString(nk):
			code := []string{el.pretty()}
			if el.arr { // one command a line
				code = nil
				for _, c := range el.vals {
					code = append(code, c.pretty())
				}
			}
			out = append(out, item{kind: kCode, lang: v.str("language", "lang"), code: clipCode(strings.Join(code, "\n"))})
		case nk != "language" && nk != "lang":
			out = append(out, item{kind: kBullet, indent: 2, text: k + ": " + el.text(maxItemText)})
		}
	}
	return out
}
