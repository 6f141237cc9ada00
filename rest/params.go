package rest

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/textclip"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// params reads a query string strictly: every parameter must be known, given
// once, and valid, or the request fails naming it.
type params struct {
	q    url.Values
	used map[string]bool
	val  *apperr.Validation
}

func newParams(q url.Values) *params {
	return &params{q: q, used: map[string]bool{}, val: &apperr.Validation{}}
}

// maxQuotedName bounds, in bytes, the name of a malformed parameter quoted
// in the error (textclip adds "…" when it cuts).
const maxQuotedName = 64

// checkQuery refuses a query string that does not parse, which
// url.URL.Query would silently shorten (dropping a "state=WAITING;" pair,
// or one with a bad percent-escape, and so listing everything). Every REST
// request passes through it before its handler reads any parameter.
// Errors: validation_failed naming the parameter.
func checkQuery(raw string) error {
	if _, err := url.ParseQuery(raw); err == nil {
		return nil
	}
	for _, pair := range strings.Split(raw, "&") {
		key, value, _ := strings.Cut(pair, "=")
		name, keyErr := url.QueryUnescape(key)
		if keyErr != nil || name == "" {
			name = key
		}
		// Valid UTF-8 first (a %FF in the name), then at most 64 bytes,
		// cut on a rune boundary, as the error body quotes it.
		name = textclip.Bytes(strings.ToValidUTF8(name, "\uFFFD"), maxQuotedName)
		if name == "" {
			name = "query"
		}
		switch {
		case strings.Contains(pair, ";"):
			return apperr.Invalid(name, `is malformed: ";" does not separate parameters; use "&" (or send ";" as %%3B)`)
		case keyErr != nil:
			return apperr.Invalid(name, "has a malformed name: %% must start an escape such as %%25")
		default:
			if _, err := url.QueryUnescape(value); err != nil {
				return apperr.Invalid(name, "has a malformed value: %% must start an escape such as %%25")
			}
		}
	}
	return apperr.Invalid("query", "the query string cannot be parsed")
}

// get returns the value of the first of names present (aliases). Giving a
// parameter twice, or two of its aliases, is an error.
func (p *params) get(names ...string) (string, bool) {
	_, v, ok := p.lookup(names...)
	return v, ok
}

// lookup is get that also returns the name the client used, so that an
// invalid value is reported under the parameter actually sent.
func (p *params) lookup(names ...string) (found, value string, ok bool) {
	for _, n := range names {
		p.used[n] = true
		vs, present := p.q[n]
		if !present {
			continue
		}
		if ok || len(vs) > 1 {
			p.val.Add(n, "is given more than once (aliases: %s)", strings.Join(names, ", "))
			return "", "", false
		}
		found, value, ok = n, vs[0], true
	}
	return found, value, ok
}

// text returns a free-text parameter.
func (p *params) text(names ...string) string {
	v, _ := p.get(names...)
	return v
}

// integer returns a whole-number parameter within [min, max], def if absent.
func (p *params) integer(def, min, max int, names ...string) int {
	name, v, ok := p.lookup(names...)
	if !ok {
		return def
	}
	// Decimal digits only, as the OpenAPI document's description of the
	// integer says: Atoi alone would also take a sign ("+5").
	n, err := strconv.Atoi(v)
	if err != nil || strings.TrimLeft(v, "0123456789") != "" || n < min || n > max {
		p.val.Add(name, "must be a whole number from %d to %d", min, max)
		return def
	}
	return n
}

// enum returns a parameter that must be one of allowed ("" if absent).
func (p *params) enum(allowed []string, names ...string) string {
	name, v, ok := p.lookup(names...)
	if !ok {
		return ""
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.val.Add(name, "must be one of %s", strings.Join(allowed, ", "))
	return ""
}

// id returns an id parameter (validated below, by the core).
func (p *params) id(name string) string {
	v, _ := p.get(name)
	return v
}

// timestamp returns a timestamp parameter.
func (p *params) timestamp(name string) *time.Time {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	t, err := timefmt.Parse(v)
	if err != nil {
		p.val.Add(name, "%s", err)
		return nil
	}
	return &t
}

// finish reports unknown parameters and every error collected.
func (p *params) finish() error {
	addUnused(p.val, p.q, p.used, "is not a parameter of this endpoint")
	return p.val.Err()
}
