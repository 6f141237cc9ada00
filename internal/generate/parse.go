package generate

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the template provider. Content beyond them is not considered.
const (
	maxInputBytes   = 64 << 10 // content bytes considered
	maxOutputBytes  = 64 << 10 // generated document size
	maxLines        = 4000     // content lines considered
	maxItems        = 1000     // parsed items kept
	maxSteps        = 200      // steps rendered (technical, detailed)
	maxSimpleSteps  = 10       // steps rendered (simplified)
	maxItemText     = 2000     // bytes of one step's text
	maxTitleRunes   = 200      // runes of the document title
	maxJSONDepth    = 32       // JSON nesting kept
	maxJSONChildren = 200      // members/elements kept per JSON container
	maxJSONTokens   = 100_000  // JSON tokens read
	maxCodeBytes    = 16 << 10 // bytes of one code block
)

// sanitize returns at most max bytes of s (cut on a rune boundary) as valid
// UTF-8 with \r\n and \r turned into \n and other control characters (NUL
// included) removed, tabs kept. cut reports whether bytes were dropped.
func sanitize(s string, max int) (out string, cut bool) {
	if len(s) > max {
		i := max
		for i > 0 && i > max-utf8.UTFMax && !utf8.RuneStart(s[i]) {
			i--
		}
		s, cut = s[:i], true
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || r == '\ufeff':
			// control characters carry no meaning in a procedure
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), cut
}

// oneLine collapses whitespace runs (newlines included) into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip returns s cut to at most max bytes on a rune boundary, with an
// ellipsis when something was cut.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.TrimRightFunc(s[:i], unicode.IsSpace) + "…"
}

// clipRunes is clip counted in runes.
func clipRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return strings.TrimRightFunc(s[:i], unicode.IsSpace) + "…"
		}
		n++
	}
	return s
}

// ---- text ----

type itemKind int

const (
	kText    itemKind = iota // a paragraph or plain line
	kHeading                 // a Markdown heading
	kNumber                  // a numbered list line ("1.", "2)", "Step 3:")
	kBullet                  // a bulleted list line ("-", "*", "+", "•")
	kCheck                   // a "Check:" / "Verify:" line
	kCode                    // a fenced (or detected) code block
)

// item is one unit of parsed text content.
type item struct {
	kind   itemKind
	text   string // one line of text (not for kCode)
	indent int    // leading width of list lines
	lang   string // info string of a code block
	code   string // body of a code block
	// detected marks a code block recognised without a fence
	detected bool
}

func (it item) isList() bool { return it.kind == kNumber || it.kind == kBullet }

// parsed is the supplied content, understood.
type parsed struct {
	items   []item
	json    *jnode // non-nil when the content is a JSON object or array
	cut     bool   // the content was longer than considered
	dropped int    // lines or items beyond the bounds
}

// parseContent parses content as JSON when it is a JSON object or array, as
// text otherwise.
func parseContent(content string) parsed {
	s, cut := sanitize(content, maxInputBytes)
	p := parsed{cut: cut}
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		root, err := parseJSON(t)
		if err == nil || (root != nil && (cut || errors.Is(err, errJSONTooLong))) {
			p.json = root
			return p
		}
	}
	p.items, p.dropped = parseText(s)
	return p
}

// parseText splits s into items.
func parseText(s string) (items []item, dropped int) {
	lines := strings.Split(s, "\n")
	if len(lines) > maxLines {
		dropped += len(lines) - maxLines
		lines = lines[:maxLines]
	}
	add := func(it item) {
		if len(items) >= maxItems {
			dropped++
			return
		}
		if it.kind != kCode {
			it.text = clip(oneLine(it.text), maxItemText)
			if it.text == "" {
				return
			}
		}
		items = append(items, it)
	}
	var para, raw []string // the current paragraph, trimmed and as written
	gap := false           // a blank line precedes the current paragraph
	flush := func() {
		defer func() { para, raw = nil, nil }()
		if len(para) == 0 {
			return
		}
		if looksLikeCode(raw) {
			body := dedentAll(raw)
			// unfenced code split by blank lines is one block
			if n := len(items); n > 0 && items[n-1].kind == kCode && items[n-1].detected && gap {
				items[n-1].code = clipCode(items[n-1].code + "\n\n" + body)
				return
			}
			add(item{kind: kCode, code: clipCode(dedentAll(raw)), detected: true})
			return
		}
		for _, t := range splitParagraph(para) {
			add(item{kind: kText, text: t})
		}
	}
	prevBlank := true
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimSpace(line)
		if fence, info, ok := openFence(t); ok {
			flush()
			indent := indentOf(line)
			var body []string
			j := i + 1
			for ; j < len(lines); j++ {
				if closesFence(strings.TrimSpace(lines[j]), fence) {
					break
				}
				body = append(body, dedent(lines[j], indent))
			}
			add(item{kind: kCode, lang: info, code: clipCode(strings.Join(body, "\n"))})
			i = j
			prevBlank = false
			continue
		}
		if t == "" || isRule(t) {
			flush()
			prevBlank = true
			continue
		}
		indent := indentOf(line)
		if h, ok := heading(t); ok {
			flush()
			add(item{kind: kHeading, text: h})
		} else if rest, ok := numbered(t); ok {
			flush()
			addList(add, kNumber, rest, indent)
		} else if rest, ok := bulleted(t); ok {
			flush()
			addList(add, kBullet, rest, indent)
		} else if rest, ok := checkLine(t); ok {
			flush()
			add(item{kind: kCheck, text: rest})
		} else if len(para) == 0 && !prevBlank && indent > 0 && len(items) > 0 && items[len(items)-1].isList() {
			// an indented continuation of a list line
			last := &items[len(items)-1]
			last.text = clip(last.text+" "+t, maxItemText)
		} else {
			if len(para) == 0 {
				gap = prevBlank
			}
			para = append(para, t)
			raw = append(raw, line)
		}
		prevBlank = false
	}
	flush()
	return items, dropped
}

func addList(add func(item), kind itemKind, rest string, indent int) {
	if c, ok := checkLine(rest); ok {
		add(item{kind: kCheck, text: c, indent: indent})
		return
	}
	add(item{kind: kind, text: rest, indent: indent})
}

// splitParagraph turns consecutive plain lines into items: a line starts a
// new item when it starts like a sentence and the previous line ended like
// one (or was short), otherwise it continues a wrapped line.
func splitParagraph(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if cur == "" {
			cur = l
			continue
		}
		r, _ := utf8.DecodeRuneInString(l)
		startsNew := !unicode.IsLower(r)
		endR, _ := utf8.DecodeLastRuneInString(cur)
		endsDone := strings.ContainsRune(".!?:;", endR) || utf8.RuneCountInString(cur) < 60
		if startsNew && endsDone && !strings.HasSuffix(cur, ",") {
			out = append(out, cur)
			cur = l
		} else {
			cur += " " + l
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

func indentOf(line string) int {
	n := 0
	for _, r := range line {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// dedent removes up to n columns of leading spaces from line.
func dedent(line string, n int) string {
	i := 0
	for i < len(line) && i < n && line[i] == ' ' {
		i++
	}
	return line[i:]
}

// dedentAll removes the indentation all non-blank lines share.
func dedentAll(lines []string) string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := 0
		for n < len(l) && (l[n] == ' ' || l[n] == '\t') {
			n++
		}
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}

func clipCode(code string) string {
	if len(code) <= maxCodeBytes {
		return code
	}
	code = clip(code, maxCodeBytes)
	if i := strings.LastIndexByte(code, '\n'); i > 0 {
		code = code[:i]
	}
	return code + "\n…"
}

// openFence recognises a code fence opening: ``` or ~~~ (three or more),
// with an optional info string.
func openFence(t string) (fence, info string, ok bool) {
	for _, ch := range []string{"`", "~"} {
		n := 0
		for n < len(t) && t[n] == ch[0] {
			n++
		}
		if n >= 3 {
			info = strings.TrimSpace(t[n:])
			if ch == "`" && strings.Contains(info, "`") {
				return "", "", false
			}
			return t[:n], info, true
		}
	}
	return "", "", false
}

func closesFence(t, fence string) bool {
	if !strings.HasPrefix(t, fence) {
		return false
	}
	return strings.Trim(t, fence[:1]) == ""
}

func isRule(t string) bool {
	if len(t) < 3 {
		return false
	}
	c := t[0]
	if c != '-' && c != '*' && c != '_' && c != '=' {
		return false
	}
	return strings.Trim(strings.ReplaceAll(t, " ", ""), string(c)) == ""
}

func heading(t string) (string, bool) {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return "", false
	}
	h := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[n:]), "#"))
	return h, h != ""
}

// numbered recognises "1. x", "1) x", "(1) x", "Step 1: x", "Step 1 - x".
func numbered(t string) (string, bool) {
	s := t
	if len(s) > 5 && strings.EqualFold(s[:5], "step ") {
		s = strings.TrimLeft(s[5:], " ")
		n := digits(s)
		if n == 0 {
			return "", false
		}
		rest := strings.TrimSpace(strings.TrimLeft(s[n:], ".):-–— "))
		return rest, rest != ""
	}
	if strings.HasPrefix(s, "(") {
		n := digits(s[1:])
		if n == 0 || len(s) < n+2 || s[n+1] != ')' {
			return "", false
		}
		rest := strings.TrimSpace(s[n+2:])
		return rest, rest != "" && strings.HasPrefix(s[n+2:], " ")
	}
	n := digits(s)
	if n == 0 || n > 4 || len(s) < n+2 || (s[n] != '.' && s[n] != ')') || (s[n+1] != ' ' && s[n+1] != '\t') {
		return "", false
	}
	rest := strings.TrimSpace(s[n+1:])
	return rest, rest != ""
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// bulleted recognises "- x", "* x", "+ x", "• x", with an optional task box.
func bulleted(t string) (string, bool) {
	for _, m := range []string{"- ", "* ", "+ ", "• ", "· ", "– ", "— ", "-\t", "*\t"} {
		if strings.HasPrefix(t, m) {
			rest := strings.TrimSpace(t[len(m):])
			for _, box := range []string{"[ ] ", "[x] ", "[X] "} {
				rest = strings.TrimSpace(strings.TrimPrefix(rest, box))
			}
			return rest, rest != ""
		}
	}
	return "", false
}

// checkLine recognises "Check: x", "Verify: x", "Expected: x".
func checkLine(t string) (string, bool) {
	for _, p := range []string{"check:", "verify:", "verification:", "expected:", "expect:"} {
		if len(t) > len(p) && strings.EqualFold(t[:len(p)], p) {
			rest := strings.TrimSpace(t[len(p):])
			return rest, rest != ""
		}
	}
	return "", false
}

// splitSentences splits prose at sentence ends: ., ! or ? followed by space
// and an upper-case letter, digit or quote. Abbreviations such as "e.g. x"
// and identifiers such as "v1.2" stay whole.
func splitSentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		if i+2 >= len(s) || s[i+1] != ' ' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(s[i+2:])
		if !(unicode.IsUpper(r) || unicode.IsDigit(r) || r == '"' || r == '`' || r == '\'' || r == '(') {
			continue
		}
		if c == '.' && abbreviation(s[start:i]) {
			continue
		}
		if part := strings.TrimSpace(s[start : i+1]); part != "" {
			out = append(out, part)
		}
		start = i + 2
	}
	if part := strings.TrimSpace(s[start:]); part != "" {
		out = append(out, part)
	}
	return out
}

func abbreviation(before string) bool {
	j := strings.LastIndexAny(before, " (")
	w := strings.ToLower(before[j+1:])
	switch w {
	case "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "no", "fig", "approx", "incl", "cf":
		return true
	}
	r, n := utf8.DecodeRuneInString(w)
	return n == len(w) && unicode.IsLetter(r) // an initial
}

// ---- JSON ----

type jkind int

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jObject
	jArray
)

// jnode is a bounded JSON value: objects keep their key order, containers
// keep at most maxJSONChildren children (more counts the rest) and nesting
// stops at maxJSONDepth (deep marks a container whose content was skipped).
type jnode struct {
	kind  jkind
	val   string   // scalar value: the string, or the literal of a number or bool
	keys  []string // object keys, in order
	vals  []*jnode // object values, or array elements
	more  int      // children not kept
	deep  bool     // content beyond the depth limit, skipped
	trunc bool     // the document ended inside this container
}

var errJSONTooLong = errors.New("too many JSON tokens")

// parseJSON reads one JSON object or array with a token walk: no recursion
// and no unbounded allocation, whatever the nesting or width. On error it
// also returns what was read so far.
func parseJSON(s string) (*jnode, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	type frame struct {
		n       *jnode
		key     string
		wantKey bool
	}
	var (
		root  *jnode
		stack []*frame
		skip  int // nesting inside a container being skipped
	)
	attach := func(n *jnode) bool {
		if len(stack) == 0 {
			if root != nil {
				return false
			}
			root = n
			return true
		}
		top := stack[len(stack)-1]
		kept := len(top.n.vals) < maxJSONChildren
		if kept {
			if top.n.kind == jObject {
				top.n.keys = append(top.n.keys, top.key)
			}
			top.n.vals = append(top.n.vals, n)
		} else {
			top.n.more++
		}
		top.wantKey = true
		return kept
	}
	fail := func(err error) (*jnode, error) {
		for _, f := range stack {
			f.n.trunc = true
		}
		return root, err
	}
	for tokens := 0; ; tokens++ {
		if tokens >= maxJSONTokens {
			return fail(errJSONTooLong)
		}
		tok, err := dec.Token()
		if err == io.EOF {
			if root == nil || len(stack) > 0 || skip > 0 {
				return fail(io.ErrUnexpectedEOF)
			}
			return root, nil
		}
		if err != nil {
			return fail(err)
		}
		if skip > 0 {
			if d, ok := tok.(json.Delim); ok {
				if d == '{' || d == '[' {
					skip++
				} else {
					skip--
				}
			}
			continue
		}
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; top.n.kind == jObject && top.wantKey {
				if k, ok := tok.(string); ok {
					top.key, top.wantKey = k, false
					continue
				}
			}
		}
		if len(stack) == 0 && root != nil {
			return fail(errors.New("trailing data after JSON value"))
		}
		var n *jnode
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '}', ']':
				stack = stack[:len(stack)-1]
				continue
			case '{':
				n = &jnode{kind: jObject}
			default:
				n = &jnode{kind: jArray}
			}
			if len(stack) >= maxJSONDepth {
				n.deep = true
				attach(n)
				skip = 1
				continue
			}
			if !attach(n) {
				skip = 1
				continue
			}
			stack = append(stack, &frame{n: n, wantKey: n.kind == jObject})
			continue
		case string:
			n = &jnode{kind: jString, val: t}
		case json.Number:
			n = &jnode{kind: jNumber, val: t.String()}
		case bool:
			n = &jnode{kind: jBool, val: "false"}
			if t {
				n.val = "true"
			}
		case nil:
			n = &jnode{kind: jNull, val: "null"}
		}
		if root == nil && len(stack) == 0 {
			return fail(errors.New("not a JSON object or array"))
		}
		attach(n)
	}
}

// get returns the value of the first key of o matching one of names
// (case-insensitively, ignoring "_" and "-"), and the matched key.
func (n *jnode) get(names ...string) (*jnode, string) {
	if n == nil || n.kind != jObject {
		return nil, ""
	}
	for _, want := range names {
		for i, k := range n.keys {
			if normKey(k) == want {
				return n.vals[i], k
			}
		}
	}
	return nil, ""
}

func normKey(k string) string {
	k = strings.ToLower(k)
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(k)
}

// str returns the text of a scalar, or "" for containers and null.
func (n *jnode) str() string {
	if n == nil || n.kind == jNull || n.kind == jObject || n.kind == jArray {
		return ""
	}
	return n.val
}

func (n *jnode) isScalar() bool { return n != nil && n.kind != jObject && n.kind != jArray }

// text returns a one-line rendering of n: a scalar's value, or compact JSON
// (clipped) for a container.
func (n *jnode) text(max int) string {
	if n == nil {
		return ""
	}
	if n.isScalar() {
		return clip(oneLine(n.val), max)
	}
	var b strings.Builder
	writeJSON(&b, n, "", "", max)
	return clip(b.String(), max)
}

// pretty returns n as indented JSON, at most max bytes (then "…").
func (n *jnode) pretty(max int) string {
	var b strings.Builder
	writeJSON(&b, n, "\n", "  ", max)
	return b.String()
}

// writeJSON writes n as JSON (indented when nl is "\n"), stopping once b
// holds max bytes. Omitted children are marked with a "…" comment-like
// string element so the reader knows the sample is partial.
func writeJSON(b *strings.Builder, n *jnode, nl, ind string, max int) {
	type item struct {
		n     *jnode
		key   string
		hasK  bool
		close string
		depth int
		last  bool
	}
	// iterative to keep stack use flat
	stack := []item{{n: n, last: true}}
	for len(stack) > 0 {
		if b.Len() >= max {
			b.WriteString("…")
			return
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.close != "" {
			if nl != "" {
				b.WriteString(nl + strings.Repeat(ind, it.depth))
			}
			b.WriteString(it.close)
			if !it.last {
				b.WriteString(",")
			}
			continue
		}
		if nl != "" && it.depth > 0 {
			b.WriteString(nl + strings.Repeat(ind, it.depth))
		}
		if it.hasK {
			b.WriteString(quoteJSON(it.key))
			b.WriteString(":")
			if nl != "" {
				b.WriteString(" ")
			}
		}
		c := it.n
		switch c.kind {
		case jString:
			b.WriteString(quoteJSON(c.val))
		case jNumber, jBool, jNull:
			b.WriteString(c.val)
		case jObject, jArray:
			open, close := "{", "}"
			if c.kind == jArray {
				open, close = "[", "]"
			}
			b.WriteString(open)
			var kids []item
			for i, v := range c.vals {
				k := item{n: v, depth: it.depth + 1}
				if c.kind == jObject {
					k.key, k.hasK = c.keys[i], true
				}
				kids = append(kids, k)
			}
			if c.more > 0 || c.deep || c.trunc {
				kids = append(kids, item{n: &jnode{kind: jString, val: "…"}, depth: it.depth + 1})
				if c.kind == jObject {
					kids[len(kids)-1].key, kids[len(kids)-1].hasK = "…", true
				}
			}
			if len(kids) == 0 {
				b.WriteString(close)
				if !it.last {
					b.WriteString(",")
				}
				continue
			}
			kids[len(kids)-1].last = true
			stack = append(stack, item{close: close, depth: it.depth, last: it.last})
			for i := len(kids) - 1; i >= 0; i-- {
				stack = append(stack, kids[i])
			}
			continue
		}
		if !it.last {
			b.WriteString(",")
		}
	}
}

// quoteJSON returns s as a JSON string literal, without HTML escaping.
func quoteJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return `""`
	}
	return strings.TrimSuffix(b.String(), "\n")
}
