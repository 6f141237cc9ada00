package contentgen

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

type param struct{ Name, In, Type, Required, Desc string }

type response struct {
	Status, Desc string
	Example      *block
}

type endpoint struct {
	Method, Path   string
	Summary, Extra []string
	Params         []param
	Request        []block
	Responses      []response
}

// Label is "METHOD /path", or what there is of it.
func (e *endpoint) Label() string { return strings.TrimSpace(e.Method + " " + e.Path) }

var (
	reMethodPath = regexp.MustCompile(`^(?i:(?:endpoint|route)\s*:\s*)?(?i:(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)):?\s+(/\S*|https?://\S+|\{\S*)\s*[-–—:]*\s*(.*)$`)
	reStatus     = regexp.MustCompile(`^(?:HTTP\s+|Status\s+)?([1-5][0-9xX]{2}|default)(?:$|[\s:.\-–—]+(.*))`)
	reParam      = regexp.MustCompile("^`?([A-Za-z_$][\\w.\\-\\[\\]{}$]*)`?\\s*(?:\\(([^)]*)\\))?\\s*[:\\-–—=]?\\s*(.*)$")
)

// methodPath reads "GET /users/{id} rest", also after "Endpoint:".
func methodPath(s string) (method, path, rest string, ok bool) {
	m := reMethodPath.FindStringSubmatch(strings.NewReplacer("`", "", "**", "").Replace(s))
	if m == nil {
		return "", "", "", false
	}
	return strings.ToUpper(m[1]), m[2], m[3], true
}

func isStatus(s string) bool { return len(s) == 3 && reStatus.MatchString(s) || s == "default" }

// api reads the endpoints of JSON or text; there is always one, if empty.
// A parameter with no location that the path names ({id} or :id) is a
// path parameter.
func (p *page) api(root *jnode, items []item) {
	if root != nil {
		p.walk(root, "", "")
	} else {
		p.apiText(items)
	}
	if len(p.API) == 0 {
		p.API = []*endpoint{{}}
	}
	for _, e := range p.API {
		e.Summary = slices.DeleteFunc(e.Summary, func(s string) bool { return s == "" })
		for i, q := range e.Params {
			if q.In == "" && q.Name != "" && (strings.Contains(e.Path, "{"+q.Name+"}") || strings.Contains(e.Path+"/", "/:"+q.Name+"/")) {
				e.Params[i].In = "path"
			}
		}
	}
}

// walk finds endpoints in JSON. An object with a method, path, parameters,
// request or responses, or under a "METHOD /path", "/path" or method key,
// is one; arrays and other objects are searched, their descriptions being
// the introduction.
func (p *page) walk(n *jnode, method, path string) {
	if p.Left += n.more; n.arr {
		for _, el := range n.vals {
			p.walk(el, method, path)
		}
		return
	}
	e := endpointFrom(n)
	if !n.obj || method != "" || e.Label() != "" || len(e.Params)+len(e.Request)+len(e.Responses) > 0 {
		e.Method, e.Path = cmp.Or(e.Method, method), cmp.Or(e.Path, path)
		p.API = append(p.API, e)
		return
	}
	p.Intro = append(p.Intro, e.Summary...)
	for i, k := range n.keys {
		if m, pt, _, ok := methodPath(k + " " + cmp.Or(path, "/")); ok {
			p.walk(n.vals[i], m, pt)
		} else if strings.HasPrefix(k, "/") {
			p.walk(n.vals[i], "", k)
		} else if !n.vals[i].scalar() {
			p.walk(n.vals[i], "", path)
		}
	}
}

// endpointFrom reads an endpoint from a value: "METHOD /path text", or an
// object whose keys are read by name.
func endpointFrom(n *jnode) *endpoint {
	e := &endpoint{}
	if m, pt, rest, ok := methodPath(n.val); ok {
		e.Method, e.Path, e.Summary = m, pt, []string{rest}
	} else if n.scalar() {
		e.Summary = []string{n.text(maxItemText)}
	}
	status := ""
	for i, k := range n.keys {
		switch v, nk := n.vals[i], normKey(k); nk {
		case "method", "verb", "httpmethod":
			e.Method = strings.ToUpper(v.text(20))
		case "path", "endpoint", "url", "route", "uri":
			if m, pt, rest, ok := methodPath(v.val); ok {
				e.Method, e.Path, e.Summary = m, pt, append(e.Summary, rest)
			} else {
				e.Path = v.text(300)
			}
		case "description", "summary", "title", "name", "operationid":
			e.Summary = append(e.Summary, v.text(maxItemText))
		case "params", "parameters", "query", "queryparams", "pathparams", "headers", "args", "arguments", "fields", "inputs":
			e.Params = append(e.Params, params(v, map[string]string{"query": "query", "queryparams": "query", "pathparams": "path", "headers": "header", "fields": "body"}[nk])...)
		case "body", "request", "requestbody", "payload", "data", "input", "example":
			e.Request = append(e.Request, exampleOf(v))
		case "response", "responses", "returns", "output", "result":
			e.Responses = append(e.Responses, responses(v)...)
		case "status", "statuscode", "code":
			status = v.text(40)
		default:
			e.Extra = append(e.Extra, k+": "+v.text(300))
		}
	}
	if i := slices.IndexFunc(e.Responses, func(r response) bool { return r.Status == "" }); status != "" && i >= 0 {
		e.Responses[i].Status = status
	} else if status != "" {
		e.Responses = append(e.Responses, response{Status: status})
	}
	return e
}

// params reads parameters: an array of objects or "name (type): text"
// strings, or an object of them by name (a one-word value being a type).
func params(v *jnode, in string) []param {
	var out []param
	for i, el := range v.vals {
		q := param{Name: v.keys[i], In: in}
		switch {
		case el.obj:
			q.Name, q.In = cmp.Or(el.str("name", "key", "field"), q.Name), cmp.Or(el.str("in", "location"), in)
			q.Type, q.Desc = el.str("type", "datatype", "format"), el.str("description", "desc", "summary", "help")
			if s := el.get("schema"); s != nil && q.Type == "" {
				q.Type = s.str("type")
			}
			q.Required = yesNo(el.str("required"))
		case v.arr && el.quoted:
			q, _ = paramLine(el.val)
			q.In = cmp.Or(q.In, in)
		case v.arr:
			continue
		case el.quoted && !strings.Contains(el.val, " "):
			q.Type = el.val
		default:
			q.Desc = el.text(300)
		}
		out = append(out, q)
	}
	return out
}

func yesNo(s string) string {
	return map[string]string{"true": "yes", "yes": "yes", "required": "yes", "false": "no", "no": "no", "optional": "no"}[strings.ToLower(s)]
}

// exampleOf is a request or response example: JSON, or a line of text.
func exampleOf(v *jnode) block {
	if v.scalar() {
		return block{Text: v.text(maxItemText)}
	}
	return block{Lang: "json", Code: v.pretty()}
}

// responses reads an object of responses by status, a response object (its
// status key, the whole an example), an array of them, or a status or text.
func responses(v *jnode) []response {
	byStatus := v.obj && len(v.keys) > 0
	for _, k := range v.keys {
		byStatus = byStatus && isStatus(k)
	}
	var out []response
	switch {
	case v.scalar() && isStatus(v.val):
		return []response{{Status: v.val}}
	case v.scalar():
		return []response{{Desc: v.text(maxItemText)}}
	case v.arr:
		for _, el := range v.vals {
			out = append(out, responses(el)...)
		}
	case byStatus:
		for i, k := range v.keys {
			r, el := response{Status: k}, v.vals[i]
			ex := el.get("example", "body", "schema", "content", "data")
			if el.scalar() {
				r.Desc = el.text(maxItemText)
			} else if r.Desc = el.str("description", "message", "summary"); ex == nil && r.Desc == "" {
				ex = el
			}
			if ex != nil {
				b := exampleOf(ex)
				r.Example = &b
			}
			out = append(out, r)
		}
	default:
		b, st := exampleOf(v), v.str("status", "statuscode", "code")
		if !isStatus(st) {
			st = ""
		}
		out = append(out, response{Status: st, Example: &b})
	}
	return out
}

// apiText reads endpoints from text: a "GET /users/{id}" line starts one;
// status lines ("404 Not Found - no such user") are its responses, list
// lines after a "Parameters:" label its parameters ("id (string,
// required): the user's id"), and code a request example, or after a
// response its example. Other text describes the endpoint, or before the
// first one introduces the document.
func (p *page) apiText(items []item) {
	var e *endpoint
	inParams := false
	for _, it := range items {
		t := it.text
		m, path, rest, isEndpoint := methodPath(t)
		st := reStatus.FindStringSubmatch(strings.Trim(t, "`* "))
		q, isParam := paramLine(t)
		b := &block{Lang: it.lang, Code: it.code}
		if e == nil && !isEndpoint && it.kind != kCode {
			p.Intro = append(p.Intro, t)
			continue
		} else if e == nil || isEndpoint {
			e, inParams = &endpoint{Method: m, Path: path, Summary: []string{rest}}, false
			p.API = append(p.API, e)
		}
		switch n := len(e.Responses); {
		case isEndpoint:
		case it.kind == kCode && n > 0 && e.Responses[n-1].Example == nil:
			e.Responses[n-1].Example = b
		case it.kind == kCode && n > 0:
			e.Responses = append(e.Responses, response{Example: b})
		case it.kind == kCode:
			e.Request = append(e.Request, *b)
		case st != nil:
			e.Responses, inParams = append(e.Responses, response{Status: st[1], Desc: st[2]}), false
		case it.list() && inParams && isParam:
			e.Params = append(e.Params, q)
		case it.kind == kHeading || strings.HasSuffix(t, ":") && len(strings.Fields(t)) <= 3:
			inParams = strings.Contains(strings.ToLower(t), "param")
		default:
			e.Summary = append(e.Summary, t)
		}
	}
}

// paramLine reads "name (type, required): text", "`name` - text", "name:
// text" or a bare name.
func paramLine(t string) (param, bool) {
	m := reParam.FindStringSubmatch(strings.TrimSpace(t))
	if m == nil {
		return param{}, false
	}
	q := param{Name: m[1], Desc: m[3]}
	for _, f := range strings.Split(m[2], ",") {
		switch f = strings.ToLower(strings.TrimSpace(f)); f {
		case "":
		case "required", "optional":
			q.Required = yesNo(f)
		case "query", "path", "header", "body":
			q.In = f
		default:
			q.Type = cmp.Or(q.Type, f)
		}
	}
	return q, true
}
