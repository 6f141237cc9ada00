package main

// The README's examples as TestReadmeRunsInOrder reads them: its fenced
// blocks, what each is (a shell session, GraphQL operations, an answer to
// compare with), and the matching of an answer with the one the README shows.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// A readmeBlock is one fenced block of the README.
type readmeBlock struct {
	lang string // the fence's info string: sh, graphql, json, or empty
	body string
	line int // of the opening fence, for messages
	// directive is the readme-test comment just above the fence, if any:
	// "serve" (the command that starts the server) or "skip: why".
	directive string
	// want is the json block that follows a runnable block (before any
	// other block): the answer the README says it gives.
	want *readmeBlock
}

func (b readmeBlock) runnable() bool { return b.lang == "sh" || b.lang == "graphql" }

var (
	fence     = regexp.MustCompile("^```([a-z]*)\\s*$")
	directive = regexp.MustCompile(`^<!--\s*readme-test:\s*(.+?)\s*-->\s*$`)
)

// readmeBlocks returns the README's fenced blocks in order, each runnable
// one with its directive and the answer shown after it.
func readmeBlocks(readme string) ([]*readmeBlock, error) {
	var (
		blocks  []*readmeBlock
		open    *readmeBlock
		body    strings.Builder
		pending string // a directive waiting for its block
	)
	for i, line := range strings.Split(readme, "\n") {
		if open != nil {
			if strings.TrimSpace(line) == "```" {
				open.body = body.String()
				blocks = append(blocks, open)
				open = nil
				continue
			}
			body.WriteString(line)
			body.WriteString("\n")
			continue
		}
		if m := directive.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			open = &readmeBlock{lang: m[1], line: i + 1, directive: pending}
			pending = ""
			body.Reset()
			continue
		}
		if pending != "" && strings.TrimSpace(line) != "" {
			return nil, fmt.Errorf("line %d: the readme-test directive %q is not followed by a block", i, pending)
		}
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: unclosed block", open.line)
	}
	for i, b := range blocks {
		if b.runnable() && i+1 < len(blocks) && blocks[i+1].lang == "json" {
			b.want = blocks[i+1]
		}
	}
	return blocks, nil
}

// jsonValues decodes out, a block's output, as a sequence of JSON values
// (curl prints each answer without a newline after it).
func jsonValues(out []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var values []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return values, nil
		}
		if err != nil {
			return values, fmt.Errorf("output is not a sequence of JSON values: %v", err)
		}
		values = append(values, v)
	}
}

// matchesShown reports how got differs from want, an answer as the README
// shows it ("" if it does not): a string "…" in want stands for any value,
// and a string with "…" in it for any string with that prefix and suffix.
// Objects must have the same keys, arrays the same length.
func matchesShown(got, want any, path string) string {
	switch w := want.(type) {
	case string:
		if w == "…" {
			return ""
		}
		g, ok := got.(string)
		if prefix, suffix, elided := strings.Cut(w, "…"); elided {
			if ok && strings.HasPrefix(g, prefix) && strings.HasSuffix(g, suffix) && len(g) >= len(prefix)+len(suffix) {
				return ""
			}
		} else if ok && g == w {
			return ""
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s.%s: not shown in the README", path, k)
			}
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
			if d := matchesShown(gv, wv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			if d := matchesShown(g[i], w[i], path+"["+strconv.Itoa(i)+"]"); d != "" {
				return d
			}
		}
		return ""
	default:
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return ""
		}
	}
	return fmt.Sprintf("%s: got %s, the README shows %s", path, compact(got), compact(want))
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// problem returns what is wrong with v, one JSON value an example
// answered, whatever the README shows: an error body, GraphQL errors, or
// an empty REST list (an example that shows nothing no longer does what it
// says).
func problem(v any) string {
	o, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if _, isErr := o["code"]; isErr && o["requestId"] != nil {
		return "an error: " + compact(o)
	}
	if errs, ok := o["errors"]; ok {
		return "GraphQL errors: " + compact(errs)
	}
	if list, ok := o["data"].([]any); ok && o["meta"] != nil && len(list) == 0 {
		return "an empty list: " + compact(o)
	}
	return ""
}

// A graphqlOperation is one operation of a graphql block, with the
// variables its "# variables:" comment gives.
type graphqlOperation struct {
	name, kind string
	variables  string // JSON, with <Operation: path> placeholders
}

var operationStart = regexp.MustCompile(`^(query|mutation|subscription)\b\s*([A-Za-z_][A-Za-z0-9_]*)?`)

// graphqlOperations returns the operations of a graphql block in order
// (a block with several names each; a lone one may be anonymous). A "# variables: {…}" comment (continued on the "#" lines below
// it) after an operation gives that operation's variables.
func graphqlOperations(body string) ([]graphqlOperation, error) {
	var (
		ops       []graphqlOperation
		variables *strings.Builder
	)
	flush := func() {
		if variables != nil && len(ops) > 0 {
			ops[len(ops)-1].variables = variables.String()
		}
		variables = nil
	}
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if variables != nil {
			if rest, ok := strings.CutPrefix(trimmed, "#"); ok && strings.HasPrefix(rest, " ") && !strings.HasPrefix(strings.TrimSpace(rest), "variables:") {
				variables.WriteString(strings.TrimSpace(rest))
				variables.WriteString(" ")
				continue
			}
			flush()
		}
		if rest, ok := strings.CutPrefix(trimmed, "# variables:"); ok {
			variables = &strings.Builder{}
			variables.WriteString(strings.TrimSpace(rest))
			variables.WriteString(" ")
			continue
		}
		if m := operationStart.FindStringSubmatch(line); m != nil {
			ops = append(ops, graphqlOperation{kind: m[1], name: m[2]})
		}
	}
	flush()
	if len(ops) == 0 {
		return nil, fmt.Errorf("no operation (a block's operations start a line with query, mutation or subscription)")
	}
	for _, op := range ops {
		if op.name == "" && len(ops) > 1 {
			return nil, fmt.Errorf("an anonymous %s among several operations", op.kind)
		}
	}
	return ops, nil
}

var placeholder = regexp.MustCompile(`<([A-Za-z_][A-Za-z0-9_]*): ([A-Za-z0-9_.]+)>`)

// fillVariables replaces each "<Operation: path>" of vars with the value at
// path (dot-separated; numbers index lists) in the data an earlier
// operation answered, as a reader pastes it.
func fillVariables(vars string, answers map[string]any) (string, error) {
	var err error
	filled := placeholder.ReplaceAllStringFunc(vars, func(p string) string {
		m := placeholder.FindStringSubmatch(p)
		v, ok := answers[m[1]]
		if !ok {
			err = fmt.Errorf("%s: operation %s has not run", p, m[1])
			return p
		}
		for _, step := range strings.Split(m[2], ".") {
			switch c := v.(type) {
			case map[string]any:
				v, ok = c[step]
			case []any:
				i, convErr := strconv.Atoi(step)
				ok = convErr == nil && i >= 0 && i < len(c)
				if ok {
					v = c[i]
				}
			default:
				ok = false
			}
			if !ok {
				err = fmt.Errorf("%s: no %q in %s's answer", p, step, m[1])
				return p
			}
		}
		s, isString := v.(string)
		if !isString {
			err = fmt.Errorf("%s is %s, not a string", p, compact(v))
			return p
		}
		return s
	})
	return filled, err
}
