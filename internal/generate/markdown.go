package generate

import (
	"strings"
	"unicode/utf8"
)

const truncNote = "_The generated document reached its size limit; the rest was left out._"

// md builds a Markdown document of bounded size. Blocks are appended whole
// or not at all, so the document stays well-formed (no unclosed fence) when
// the limit is reached; once a block does not fit, later ones are dropped
// and a note says so.
type md struct {
	b     strings.Builder
	limit int
	full  bool
}

func newMD() *md { return &md{limit: maxOutputBytes - len(truncNote) - 8} }

// add appends s whole, or marks the document full.
func (w *md) add(s string) bool {
	if w.full {
		return false
	}
	if w.b.Len()+len(s) > w.limit {
		w.full = true
		return false
	}
	w.b.WriteString(s)
	return true
}

func (w *md) h(level int, t string) {
	w.add(strings.Repeat("#", level) + " " + t + "\n\n")
}

// p appends a paragraph.
func (w *md) p(t string) {
	if t = strings.TrimSpace(t); t != "" {
		w.add(esc(t) + "\n\n")
	}
}

// ul appends a bulleted list.
func (w *md) ul(lines []string) {
	if len(lines) == 0 {
		return
	}
	for _, l := range lines {
		if !w.add("- " + esc(l) + "\n") {
			return
		}
	}
	w.add("\n")
}

// code appends a fenced code block, each line prefixed with indent. A block
// too large for the remaining room is shortened (whole lines) when a useful
// part fits.
func (w *md) code(indent, lang, body string) {
	if w.full {
		return
	}
	fence := fenceFor(body)
	open := indent + fence + lang + "\n"
	closing := indent + fence + "\n\n"
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	var b strings.Builder
	b.WriteString(open)
	room := w.limit - w.b.Len() - len(closing) - len(indent) - 8
	shortened := false
	for _, l := range lines {
		line := indent + l
		if l == "" {
			line = ""
		}
		if b.Len()+len(line)+1 > room {
			shortened = true
			break
		}
		b.WriteString(line + "\n")
	}
	if shortened {
		if b.Len() < len(open)+64 {
			w.full = true
			return
		}
		b.WriteString(indent + "…\n")
	}
	b.WriteString(closing)
	w.add(b.String())
	if shortened {
		w.full = true
	}
}

func (w *md) String() string {
	out := strings.TrimRight(w.b.String(), "\n") + "\n"
	if w.full {
		out += "\n" + truncNote + "\n"
	}
	return out
}

// fenceFor returns a backtick fence longer than any backtick run in body.
func fenceFor(body string) string {
	longest, run := 0, 0
	for i := 0; i < len(body); i++ {
		if body[i] == '`' {
			run++
			if run > longest {
				longest = run
			}
		} else {
			run = 0
		}
	}
	if longest < 3 {
		return "```"
	}
	return strings.Repeat("`", longest+1)
}

// esc keeps a line of text from being read as Markdown structure (a heading,
// quote, list marker, table row or fence) where it is placed.
func esc(t string) string {
	if t == "" {
		return t
	}
	switch t[0] {
	case '#', '>', '|', '=', '~':
		return `\` + t
	case '`':
		if strings.HasPrefix(t, "```") {
			return `\` + t
		}
	case '-', '*', '+':
		if len(t) == 1 || t[1] == ' ' || t[1] == '\t' || strings.Trim(t, string(t[0])+" ") == "" {
			return `\` + t
		}
	}
	if n := digits(t); n > 0 && n < len(t) && (t[n] == '.' || t[n] == ')') {
		return t[:n] + `\` + t[n:]
	}
	return t
}

// cell makes s safe for a table cell.
func cell(s string) string {
	s = clip(oneLine(s), 300)
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	if s == "" {
		return "—"
	}
	return s
}

// ic returns s as inline code.
func ic(s string) string {
	s = clip(oneLine(s), 300)
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return "`` " + s + " ``"
}

// firstSentence returns the first sentence of s, at most max runes.
func firstSentence(s string, max int) string {
	if ss := splitSentences(s); len(ss) > 0 {
		s = ss[0]
	}
	return clipRunes(s, max)
}

// plural returns "n word" or "n words".
func plural(n int, word string) string {
	s := itoa(n) + " " + word
	if n != 1 {
		s += "s"
	}
	return s
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// upperFirst upper-cases the first letter of s.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || n == 0 {
		return s
	}
	return strings.ToUpper(string(r)) + s[n:]
}
