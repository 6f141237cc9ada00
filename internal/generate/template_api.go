package generate

import (
	"strings"
)

const maxEndpoints = 50

type param struct {
	name, in, typ, required, desc string
}

type response struct {
	status, desc string
	example      *item
}

type endpoint struct {
	method, path string
	summary      []string
	params       []param
	request      []item // code items are examples, text items descriptions
	responses    []response
	extra        []string
}

func (e *endpoint) label() string {
	switch {
	case e.method != "" && e.path != "":
		return e.method + " " + e.path
	case e.path != "":
		return e.path
	case e.method != "":
		return e.method
	}
	return ""
}

type apiDoc struct {
	intro   []string
	eps     []*endpoint
	notes   []string
	omitted int
	cut     bool
}

func (d *apiDoc) add(e *endpoint) *endpoint {
	if len(d.eps) >= maxEndpoints {
		d.omitted++
		return &endpoint{} // collected, not shown
	}
	d.eps = append(d.eps, e)
	return e
}

var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "CONNECT": true}

// methodPath reads "GET /users/{id} rest" (backticks and bold allowed).
func methodPath(s string) (method, path, rest string, ok bool) {
	s = strings.NewReplacer("`", "", "**", "").Replace(s)
	f := strings.Fields(s)
	if len(f) < 2 || !httpMethods[strings.ToUpper(strings.TrimRight(f[0], ":"))] {
		return "", "", "", false
	}
	p := f[1]
	if !(strings.HasPrefix(p, "/") || strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "{")) {
		return "", "", "", false
	}
	rest = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(strings.Join(f[2:], " ")), "-–—:"))
	return strings.ToUpper(strings.TrimRight(f[0], ":")), p, rest, true
}

func buildAPI(p parsed) apiDoc {
	var d apiDoc
	if p.json != nil {
		d = apiFromJSON(p.json)
	} else {
		d = apiFromText(p.items)
	}
	d.cut = d.cut || p.cut
	d.omitted += p.dropped
	return d
}

// ---- JSON ----

func apiFromJSON(root *jnode) apiDoc {
	var d apiDoc
	d.cut = root.trunc || root.deep
	d.omitted = root.more
	switch root.kind {
	case jArray:
		for _, el := range root.vals {
			apiElement(&d, el, "", "")
		}
	case jObject:
		if paths, _ := root.get("paths"); paths != nil && paths.kind == jObject {
			if v, _ := root.get("description", "summary", "title"); v != nil {
				d.intro = append(d.intro, v.text(maxItemText))
			}
			if info, _ := root.get("info"); info != nil {
				if v, _ := info.get("description", "title"); v != nil {
					d.intro = append(d.intro, v.text(maxItemText))
				}
			}
			for i, path := range paths.keys {
				ops := paths.vals[i]
				found := false
				for j, m := range ops.keys {
					if httpMethods[strings.ToUpper(m)] {
						found = true
						apiElement(&d, ops.vals[j], strings.ToUpper(m), path)
					}
				}
				if !found {
					apiElement(&d, ops, "", path)
				}
			}
			d.omitted += paths.more
			return d
		}
		if list, _ := root.get("endpoints", "routes", "apis", "operations", "methods"); list != nil && !list.isScalar() {
			if v, _ := root.get("description", "summary", "overview"); v != nil {
				d.intro = append(d.intro, v.text(maxItemText))
			}
			if list.kind == jArray {
				for _, el := range list.vals {
					apiElement(&d, el, "", "")
				}
			} else {
				for i, k := range list.keys {
					m, p, _, ok := methodPath(k)
					if !ok {
						p = k
					}
					apiElement(&d, list.vals[i], m, p)
				}
			}
			d.omitted += list.more
			return d
		}
		apiElement(&d, root, "", "")
	}
	return d
}

// apiElement adds the endpoint el describes.
func apiElement(d *apiDoc, el *jnode, method, path string) {
	e := d.add(&endpoint{method: method, path: path})
	switch {
	case el == nil:
	case el.kind == jString:
		if m, p, rest, ok := methodPath(el.val); ok {
			e.method, e.path = m, p
			if rest != "" {
				e.summary = append(e.summary, rest)
			}
		} else {
			e.summary = append(e.summary, el.text(maxItemText))
		}
	case el.kind == jObject:
		endpointFromObject(e, el)
	default:
		e.summary = append(e.summary, el.text(maxItemText))
	}
}

func endpointFromObject(e *endpoint, o *jnode) {
	status := ""
	for i, k := range o.keys {
		v := o.vals[i]
		switch normKey(k) {
		case "method", "verb", "httpmethod", "httpverb":
			if m := strings.ToUpper(strings.TrimSpace(v.str())); m != "" {
				e.method = m
			}
		case "path", "endpoint", "url", "route", "uri", "resource", "href":
			s := strings.TrimSpace(v.str())
			if m, p, rest, ok := methodPath(s); ok {
				e.method, e.path = m, p
				if rest != "" {
					e.summary = append(e.summary, rest)
				}
			} else if s != "" {
				e.path = s
			} else if !v.isScalar() {
				e.extra = append(e.extra, k+": "+v.text(300))
			}
		case "description", "summary", "name", "title", "operationid", "doc", "docs", "purpose":
			if t := v.text(maxItemText); t != "" {
				e.summary = append(e.summary, t)
			}
		case "params", "parameters", "query", "queryparams", "queryparameters", "querystring", "pathparams",
			"pathparameters", "headers", "header", "args", "arguments", "fields", "inputs", "form", "formdata":
			e.params = append(e.params, paramsFrom(v, locationOf(k))...)
		case "body", "request", "requestbody", "payload", "data", "input", "example", "requestexample", "sample":
			e.request = append(e.request, exampleOf(v))
		case "response", "responses", "returns", "output", "result", "reply", "responsebody", "responseexample":
			e.responses = append(e.responses, responsesFrom(v)...)
		case "status", "statuscode", "code", "httpstatus", "httpcode":
			status = v.text(40)
		case "auth", "authentication", "authorization", "security", "scopes", "permissions":
			e.extra = append(e.extra, "Authentication: "+v.text(300))
		default:
			e.extra = append(e.extra, k+": "+v.text(300))
		}
	}
	if status != "" {
		for i := range e.responses {
			if e.responses[i].status == "" {
				e.responses[i].status = status
				return
			}
		}
		e.responses = append(e.responses, response{status: status})
	}
}

// locationOf guesses where parameters under key travel.
func locationOf(key string) string {
	switch k := normKey(key); {
	case strings.Contains(k, "query"):
		return "query"
	case strings.HasPrefix(k, "path"):
		return "path"
	case strings.HasPrefix(k, "header"):
		return "header"
	case k == "fields" || strings.HasPrefix(k, "form"):
		return "body"
	}
	return ""
}

func paramsFrom(v *jnode, in string) []param {
	var out []param
	switch v.kind {
	case jArray:
		for _, el := range v.vals {
			switch {
			case el.kind == jObject:
				out = append(out, paramFromObject("", el, in))
			case el.isScalar():
				if p, ok := paramFromLine(el.val); ok {
					if p.in == "" {
						p.in = in
					}
					out = append(out, p)
				}
			}
		}
	case jObject:
		for i, k := range v.keys {
			el := v.vals[i]
			switch {
			case el.kind == jObject:
				out = append(out, paramFromObject(k, el, in))
			case el.kind == jString && isTypeWord(el.val):
				out = append(out, param{name: k, in: in, typ: el.val})
			case el.kind == jString:
				out = append(out, param{name: k, in: in, desc: el.val})
			default:
				out = append(out, param{name: k, in: in, typ: kindName(el), desc: "Example: " + ic(el.text(100))})
			}
		}
	case jString:
		for _, part := range strings.Split(v.val, ",") {
			if p, ok := paramFromLine(part); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func paramFromObject(name string, o *jnode, in string) param {
	p := param{name: name, in: in}
	if v, _ := o.get("name", "key", "field", "param", "parameter"); v != nil && v.isScalar() {
		p.name = v.text(100)
	}
	if v, _ := o.get("in", "location", "where", "source"); v != nil && v.isScalar() {
		p.in = v.text(40)
	}
	if v, _ := o.get("type", "datatype", "format"); v != nil {
		p.typ = v.text(60)
	} else if s, _ := o.get("schema"); s != nil {
		if t, _ := s.get("type"); t != nil {
			p.typ = t.text(60)
		}
	}
	if v, _ := o.get("required"); v != nil {
		p.required = yesNo(v.str())
	} else if v, _ := o.get("optional"); v != nil {
		p.required = map[string]string{"yes": "no", "no": "yes"}[yesNo(v.str())]
	}
	if v, _ := o.get("description", "desc", "doc", "summary", "help", "note"); v != nil {
		p.desc = v.text(300)
	}
	if v, _ := o.get("example", "default"); v != nil && p.desc == "" {
		p.desc = "Example: " + ic(v.text(100))
	}
	return p
}

func yesNo(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "y", "1", "required":
		return "yes"
	case "false", "no", "n", "0", "optional":
		return "no"
	}
	return ""
}

func kindName(n *jnode) string {
	switch n.kind {
	case jNumber:
		return "number"
	case jBool:
		return "boolean"
	case jArray:
		return "array"
	case jObject:
		return "object"
	case jNull:
		return "null"
	}
	return "string"
}

func isTypeWord(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "[]"), "?")
	switch t {
	case "string", "str", "number", "integer", "int", "int32", "int64", "float", "double", "decimal", "boolean", "bool",
		"object", "array", "list", "map", "uuid", "date", "datetime", "date-time", "timestamp", "time", "email", "url",
		"uri", "any", "file", "binary", "json", "long", "char", "byte":
		return true
	}
	return false
}

// exampleOf is a request or response sample: JSON for containers, text for
// scalars.
func exampleOf(v *jnode) item {
	if v.isScalar() {
		return item{kind: kText, text: v.text(maxItemText)}
	}
	return item{kind: kCode, lang: "json", code: clipCode(v.pretty(maxCodeBytes))}
}

func isStatus(k string) bool {
	k = strings.ToUpper(strings.TrimSpace(k))
	if k == "DEFAULT" {
		return true
	}
	if len(k) != 3 || k[0] < '1' || k[0] > '5' {
		return false
	}
	return (k[1] >= '0' && k[1] <= '9' || k[1] == 'X') && (k[2] >= '0' && k[2] <= '9' || k[2] == 'X')
}

func responsesFrom(v *jnode) []response {
	switch v.kind {
	case jObject:
		byStatus := len(v.keys) > 0
		for _, k := range v.keys {
			if !isStatus(k) {
				byStatus = false
				break
			}
		}
		if byStatus {
			var out []response
			for i, k := range v.keys {
				out = append(out, responseFrom(k, v.vals[i]))
			}
			return out
		}
		r := response{}
		if s, _ := v.get("status", "statuscode", "code"); s != nil && s.isScalar() && isStatus(s.val) {
			r.status = s.val
		}
		ex := exampleOf(v)
		r.example = &ex
		return []response{r}
	case jArray:
		var out []response
		for _, el := range v.vals {
			if el.kind == jObject {
				if s, _ := el.get("status", "statuscode", "code"); s != nil && s.isScalar() {
					out = append(out, responseFrom(s.val, el))
					continue
				}
			}
			ex := exampleOf(el)
			out = append(out, response{example: &ex})
		}
		if len(out) == 0 {
			ex := exampleOf(v)
			out = append(out, response{example: &ex})
		}
		return out
	}
	t := v.text(maxItemText)
	if isStatus(t) {
		return []response{{status: t}}
	}
	return []response{{desc: t}}
}

func responseFrom(status string, v *jnode) response {
	r := response{status: status}
	if v.isScalar() {
		r.desc = v.text(maxItemText)
		return r
	}
	if d, _ := v.get("description", "message", "summary", "desc", "meaning"); d != nil && d.isScalar() {
		r.desc = d.text(maxItemText)
	}
	if ex, _ := v.get("example", "body", "schema", "content", "data", "response", "examples"); ex != nil {
		it := exampleOf(ex)
		r.example = &it
	} else if r.desc == "" || len(v.keys) > 2 {
		it := exampleOf(v)
		r.example = &it
	}
	return r
}

// ---- text ----

// apiFromText reads endpoints from lines such as "GET /users/{id}",
// "Endpoint: POST /x", section lines ("Parameters:", "Request body",
// "Responses"), parameter lines ("- id (string, required): the user's id"),
// status lines ("404 Not Found - no such user") and code blocks (request or
// response examples, by section).
func apiFromText(items []item) apiDoc {
	var d apiDoc
	var cur *endpoint
	section := ""
	ensure := func() *endpoint {
		if cur == nil {
			cur = d.add(&endpoint{})
		}
		return cur
	}
	for _, it := range items {
		if it.kind == kCode {
			e := ensure()
			c := it
			if section == "response" {
				if n := len(e.responses); n > 0 && e.responses[n-1].example == nil {
					e.responses[n-1].example = &c
				} else {
					e.responses = append(e.responses, response{example: &c})
				}
			} else {
				e.request = append(e.request, c)
			}
			continue
		}
		t := it.text
		if m, p, rest, ok := methodPath(t); ok {
			cur = d.add(&endpoint{method: m, path: p})
			if rest != "" {
				cur.summary = append(cur.summary, rest)
			}
			section = ""
			continue
		}
		if key, val, ok := keyValue(t); ok {
			switch key {
			case "endpoint", "route", "path", "url", "uri":
				if m, p, rest, ok := methodPath(val); ok {
					cur = d.add(&endpoint{method: m, path: p})
					if rest != "" {
						cur.summary = append(cur.summary, rest)
					}
				} else if e := ensure(); e.path == "" {
					e.path = strings.Trim(val, "`")
				} else {
					cur = d.add(&endpoint{path: strings.Trim(val, "`")})
				}
				section = ""
				continue
			case "method", "verb":
				if m := strings.ToUpper(strings.Trim(val, "` ")); httpMethods[m] {
					ensure().method = m
					continue
				}
			}
		}
		if sec, rest, ok := sectionOf(it); ok {
			section = sec
			if rest != "" {
				applyToSection(ensure(), section, rest, true)
			}
			continue
		}
		if st, desc, ok := statusLine(t); ok {
			ensure().responses = append(ensure().responses, response{status: st, desc: desc})
			section = "response"
			continue
		}
		if cur == nil && section == "" {
			if it.kind == kCheck {
				d.notes = append(d.notes, "Check: "+t)
			} else {
				d.intro = append(d.intro, t)
			}
			continue
		}
		applyToSection(ensure(), section, t, it.isList())
	}
	return d
}

func applyToSection(e *endpoint, section, t string, list bool) {
	switch section {
	case "params":
		if p, ok := paramFromLine(t); ok && (list || strings.ContainsAny(t, ":(-–—")) {
			e.params = append(e.params, p)
			return
		}
		if !strings.Contains(t, " ") || strings.Contains(t, ",") {
			added := false
			for _, part := range strings.Split(t, ",") {
				if p, ok := paramFromLine(part); ok {
					e.params = append(e.params, p)
					added = true
				}
			}
			if added {
				return
			}
		}
		e.extra = append(e.extra, t)
	case "request":
		e.request = append(e.request, item{kind: kText, text: t})
	case "response":
		if st, desc, ok := statusLine(t); ok {
			e.responses = append(e.responses, response{status: st, desc: desc})
		} else if n := len(e.responses); n > 0 && e.responses[n-1].desc == "" {
			e.responses[n-1].desc = t
		} else {
			e.responses = append(e.responses, response{desc: t})
		}
	default:
		e.summary = append(e.summary, t)
	}
}

// keyValue reads "Key: value" lines with a short key.
func keyValue(t string) (key, val string, ok bool) {
	t = strings.NewReplacer("**", "", "__", "").Replace(t)
	i := strings.IndexByte(t, ':')
	if i <= 0 || i > 20 {
		return "", "", false
	}
	key = strings.ToLower(strings.TrimSpace(t[:i]))
	val = strings.TrimSpace(t[i+1:])
	return key, val, val != ""
}

// sectionOf recognises a line that opens a parameters, request or response
// section: a heading, or a short line ending with ":" (text after the colon
// is returned as rest).
func sectionOf(it item) (section, rest string, ok bool) {
	t := strings.NewReplacer("**", "", "__", "").Replace(it.text)
	head := t
	if i := strings.IndexByte(t, ':'); i >= 0 {
		head, rest = t[:i], strings.TrimSpace(t[i+1:])
	} else if it.kind != kHeading && len(t) > 40 {
		return "", "", false
	}
	if it.kind != kHeading && !strings.Contains(t, ":") && len(strings.Fields(t)) > 3 {
		return "", "", false
	}
	h := strings.ToLower(strings.TrimSpace(head))
	if len(h) > 40 {
		return "", "", false
	}
	switch {
	case strings.Contains(h, "param") || strings.Contains(h, "argument") || h == "query" || strings.Contains(h, "query string") || h == "headers" || h == "inputs" || h == "fields":
		return "params", rest, true
	case strings.Contains(h, "request") || h == "body" || strings.Contains(h, "payload") || h == "example":
		return "request", rest, true
	case strings.Contains(h, "response") || strings.HasPrefix(h, "return") || h == "status codes" || h == "errors" || h == "output":
		return "response", rest, true
	}
	return "", "", false
}

// statusLine reads "404 Not Found - no such user" or "HTTP 200: OK".
func statusLine(t string) (status, desc string, ok bool) {
	t = strings.TrimSpace(strings.NewReplacer("`", "", "**", "").Replace(t))
	t = strings.TrimPrefix(strings.TrimPrefix(t, "HTTP "), "Status ")
	if len(t) < 3 || !isStatus(t[:3]) || strings.EqualFold(t[:3], "def") {
		return "", "", false
	}
	if len(t) > 3 && !strings.ContainsRune(" :-–—.", rune(t[3])) {
		return "", "", false
	}
	desc = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(t[3:]), ":-–—."))
	return t[:3], desc, true
}

// paramFromLine reads "name (type, required): description", "`name` -
// description", "name: description" or a bare name.
func paramFromLine(t string) (param, bool) {
	t = strings.TrimSpace(t)
	var p param
	name := ""
	rest := ""
	if strings.HasPrefix(t, "`") {
		end := strings.IndexByte(t[1:], '`')
		if end < 0 {
			return p, false
		}
		name, rest = t[1:end+1], t[end+2:]
	} else {
		i := strings.IndexAny(t, " :(\t")
		if i < 0 {
			name = t
		} else {
			name, rest = t[:i], t[i:]
		}
	}
	name = strings.Trim(name, "*_")
	if !isParamName(name) {
		return p, false
	}
	p.name = name
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "(") {
		if end := strings.IndexByte(rest, ')'); end > 0 {
			for _, part := range strings.Split(rest[1:end], ",") {
				part = strings.TrimSpace(part)
				switch low := strings.ToLower(part); {
				case low == "required" || low == "mandatory":
					p.required = "yes"
				case low == "optional":
					p.required = "no"
				case low == "query" || low == "path" || low == "header" || low == "body" || low == "cookie":
					p.in = low
				case strings.HasPrefix(low, "in "):
					p.in = strings.TrimSpace(part[3:])
				case p.typ == "":
					p.typ = part
				}
			}
			rest = strings.TrimSpace(rest[end+1:])
		}
	}
	p.desc = strings.TrimSpace(strings.TrimLeft(rest, ":-–—= "))
	if strings.Contains(strings.ToLower(p.desc), "required") && p.required == "" && !strings.Contains(strings.ToLower(p.desc), "not required") {
		p.required = "yes"
	}
	return p, true
}

func isParamName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r == '-' || r == '.' || r == '[' || r == ']' || r == '{' || r == '}' || r == '$' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// ---- rendering ----

func renderAPI(w *md, o opts, d apiDoc) {
	if o.simple() {
		renderAPISimple(w, o, d)
		return
	}
	if o.detailed() {
		w.h(2, "Overview")
	}
	for _, t := range d.intro {
		w.p(t)
	}
	if o.detailed() {
		w.p("This reference covers **" + o.name + "**: " + plural(len(d.eps), "endpoint") + ".")
		pre := []string{
			"Network access to the service's base URL.",
			"Valid credentials, if the endpoint requires authentication.",
		}
		if n := langName(o.lang); n != "" {
			pre = append(pre, "An HTTP client: curl, or the HTTP library of your "+n+" project.")
		} else {
			pre = append(pre, "An HTTP client such as curl.")
		}
		w.h(2, "Prerequisites")
		w.ul(pre)
	}
	switch len(d.eps) {
	case 0:
		w.h(2, "Endpoint")
		w.p("No endpoint (method and path) could be read from the supplied content.")
		writeEndpointBody(w, o, &endpoint{}, 2)
	case 1:
		e := d.eps[0]
		w.h(2, "Endpoint")
		if l := e.label(); l != "" {
			w.p(ic(l))
		} else {
			w.p("The method and path are not given in the supplied content.")
		}
		writeEndpointBody(w, o, e, 2)
	default:
		w.h(2, "Endpoints")
		var list []string
		for _, e := range d.eps {
			l := ic(nonEmpty(e.label(), "(unnamed)"))
			if len(e.summary) > 0 {
				l += " — " + firstSentence(e.summary[0], 120)
			}
			list = append(list, l)
		}
		w.ul(list)
		for i, e := range d.eps {
			if w.full {
				break
			}
			w.h(2, "Endpoint "+itoa(i+1)+": "+ic(nonEmpty(e.label(), "(unnamed)")))
			writeEndpointBody(w, o, e, 3)
		}
	}
	if o.detailed() {
		writeAPIEdgeCases(w, d)
	}
	var notes []string
	notes = append(notes, d.notes...)
	if d.omitted > 0 {
		notes = append(notes, plural(d.omitted, "further item")+" of the supplied content "+map[bool]string{true: "was", false: "were"}[d.omitted == 1]+" left out (limit reached).")
	}
	if d.cut {
		notes = append(notes, "The supplied content was longer than the generator reads; only its beginning was used.")
	}
	if len(notes) > 0 {
		w.h(2, "Notes")
		w.ul(notes)
	}
}

func writeEndpointBody(w *md, o opts, e *endpoint, level int) {
	for _, s := range e.summary {
		w.p(s)
	}
	w.h(level, "Parameters")
	if len(e.params) == 0 {
		w.p("None specified in the supplied content.")
	} else {
		w.add("| Name | In | Type | Required | Description |\n|---|---|---|---|---|\n")
		for _, p := range e.params {
			if p.in == "" && pathHas(e.path, p.name) {
				p.in = "path"
			}
			if !w.add("| " + ic(p.name) + " | " + cell(p.in) + " | " + cell(p.typ) + " | " + cell(p.required) + " | " + cell(p.desc) + " |\n") {
				break
			}
		}
		w.add("\n")
	}
	w.h(level, "Request")
	if l := e.label(); l != "" {
		w.p("Send " + ic(l) + ".")
	}
	if len(e.request) == 0 {
		switch e.method {
		case "GET", "HEAD", "DELETE", "OPTIONS":
			w.p("No request body.")
		default:
			w.p("No request body is specified in the supplied content.")
		}
	}
	for _, it := range e.request {
		writeSample(w, o, it)
	}
	w.h(level, "Responses")
	if len(e.responses) == 0 {
		w.p("No responses are specified in the supplied content.")
	}
	for _, r := range e.responses {
		line := ""
		switch {
		case r.status != "" && r.desc != "":
			line = "**" + r.status + "** — " + r.desc
		case r.status != "":
			line = "**" + r.status + "**"
		case r.desc != "":
			line = r.desc
		case r.example != nil:
			line = "Example response:"
		}
		w.p(line)
		if r.example != nil {
			writeSample(w, o, *r.example)
		}
	}
	if len(e.extra) > 0 && !o.simple() {
		w.h(level+1, "Other details")
		w.ul(e.extra)
	}
}

// pathHas reports whether path has the placeholder {name} or :name.
func pathHas(path, name string) bool {
	if name == "" {
		return false
	}
	if strings.Contains(path, "{"+name+"}") {
		return true
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == ":"+name {
			return true
		}
	}
	return false
}

func writeSample(w *md, o opts, it item) {
	if it.kind == kCode {
		tag := infoTag(it.lang)
		if tag == "" && looksJSON(it.code) {
			tag = "json"
		}
		w.code("", tag, it.code)
		return
	}
	w.p(it.text)
}

func looksJSON(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}

func writeAPIEdgeCases(w *md, d apiDoc) {
	var edges []string
	for _, e := range d.eps {
		for _, p := range e.params {
			if p.required == "yes" && len(edges) < 8 {
				edges = append(edges, "Request to "+ic(nonEmpty(e.label(), "the endpoint"))+" without the required "+ic(p.name)+": expect a 4xx error.")
			}
		}
		for _, r := range e.responses {
			if len(r.status) == 3 && (r.status[0] == '4' || r.status[0] == '5') && len(edges) < 12 {
				edges = append(edges, ic(r.status)+" from "+ic(nonEmpty(e.label(), "the endpoint"))+": "+nonEmpty(firstSentence(r.desc, 120), "handle it explicitly")+".")
			}
		}
	}
	edges = append(edges,
		"Missing, empty or malformed request data: validate before sending and expect 400 or 422.",
		"Retries: repeat only idempotent requests (GET, PUT, DELETE) automatically; a repeated POST may act twice.",
		"Large result sets: use paging or limits where the endpoint offers them.")
	w.h(2, "Edge cases")
	w.ul(edges)
	w.h(2, "Troubleshooting")
	w.ul([]string{
		"401 Unauthorized or 403 Forbidden: check the credentials and their permissions.",
		"404 Not Found: check the method, the path and any ids in it.",
		"400 or 422: compare the request with the Parameters and Request sections.",
		"429 Too Many Requests: slow down and honour Retry-After.",
		"5xx: retry later with backoff; if it persists, contact the service owner.",
	})
}

func renderAPISimple(w *md, o opts, d apiDoc) {
	if len(d.intro) > 0 {
		w.p(firstSentence(d.intro[0], 200))
	}
	eps := d.eps
	if len(eps) == 0 {
		eps = []*endpoint{{}}
	}
	if len(eps) > maxSimpleSteps {
		eps = eps[:maxSimpleSteps]
	}
	for i, e := range eps {
		if len(eps) > 1 {
			w.h(2, itoa(i+1)+". "+ic(nonEmpty(e.label(), "(unnamed)")))
		}
		level := 2
		if len(eps) > 1 {
			level = 3
		}
		w.h(level, "How to call it")
		if len(e.summary) > 0 {
			w.p(firstSentence(e.summary[0], 200))
		}
		switch {
		case e.method != "" && e.path != "":
			w.p("Send a " + ic(e.method) + " request to " + ic(e.path) + ".")
		case e.path != "":
			w.p("Send a request to " + ic(e.path) + ".")
		default:
			w.p("The supplied content does not say where to send the request.")
		}
		w.h(level, "What to send")
		var send []string
		for _, p := range e.params {
			s := ic(p.name)
			if p.required == "yes" {
				s += " (required)"
			}
			if p.desc != "" {
				s += ": " + firstSentence(p.desc, 120)
			}
			send = append(send, s)
		}
		if len(send) == 0 && len(e.request) == 0 {
			w.p("Nothing extra.")
		}
		w.ul(send)
		if len(e.request) > 0 {
			writeSample(w, o, e.request[0])
		}
		w.h(level, "What you get back")
		var back []string
		for _, r := range e.responses {
			switch {
			case r.status != "" && r.desc != "":
				back = append(back, ic(r.status)+": "+firstSentence(r.desc, 120))
			case r.status != "":
				back = append(back, ic(r.status))
			case r.desc != "":
				back = append(back, firstSentence(r.desc, 120))
			}
		}
		if len(back) == 0 {
			w.p("The supplied content does not describe the answer.")
		}
		w.ul(back)
		for _, r := range e.responses {
			if r.example != nil {
				writeSample(w, o, *r.example)
				break
			}
		}
	}
	if len(d.eps) > len(eps) {
		w.p(plural(len(d.eps)-len(eps), "more endpoint") + " not shown here.")
	}
}
