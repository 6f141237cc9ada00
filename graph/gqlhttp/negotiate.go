package gqlhttp

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/procsvc/procsvc/graph/live"
)

// The media types /graphql answers in. A query or mutation is answered in
// one of the JSON types, or framed as one Server-Sent Event
// (live.EventFramer); only a subscription is streamed.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaEventStream     = live.EventStreamType
)

// offered lists what /graphql can answer, in the server's order of
// preference when the client's Accept header ranks them equally.
var offered = [...]string{mediaJSON, mediaGraphQLResponse, mediaEventStream}

// negotiation is the outcome of content negotiation for one request.
type negotiation struct {
	// media is the type to answer a query or mutation in: the acceptable
	// offered type of highest quality, ties going to the one whose
	// matching range comes first in the header, then to offered's order;
	// application/json when the client accepts none of them (GraphQL over
	// HTTP allows it) or sends no Accept header.
	media string
	// eventStream reports whether text/event-stream is acceptable at all
	// (quality above 0): a subscription may then be streamed.
	eventStream bool
}

// acceptRange is one media range of an Accept header.
type acceptRange struct {
	typ, sub string
	// params reports whether the range names media type parameters
	// (besides q), which make it more specific than the bare type.
	params bool
	// q is the quality, in thousandths (0 to 1000).
	q int
	// pos is the range's place in the header.
	pos int
}

// specificity ranks how closely r names a type: */* < type/* < type/sub <
// type/sub;param=value.
func (r acceptRange) specificity() int {
	switch {
	case r.typ == "*":
		return 0
	case r.sub == "*":
		return 1
	case !r.params:
		return 2
	}
	return 3
}

func (r acceptRange) matches(typ, sub string) bool {
	return (r.typ == "*" || r.typ == typ) && (r.sub == "*" || r.sub == sub)
}

// negotiate chooses how to answer a request with header's Accept values,
// following RFC 9110 §12.5.1: each offered type takes the quality of the
// most specific range that matches it (so text/event-stream;q=0 refuses
// it even beside */*), and q=0 means not acceptable. Ranges that do not
// parse, or whose q is not a number from 0 to 1, are ignored. Parameters
// other than q only make a range more specific: procsvc's answers carry
// none that could conflict.
func negotiate(header http.Header) negotiation {
	ranges := parseAccept(header.Values("Accept"))
	if len(ranges) == 0 {
		return negotiation{media: mediaJSON}
	}
	best, bestQ, bestPos := mediaJSON, 0, 0
	n := negotiation{}
	for _, media := range offered {
		typ, sub, _ := strings.Cut(media, "/")
		q, pos, ok := quality(ranges, typ, sub)
		if !ok || q == 0 {
			continue
		}
		if media == mediaEventStream {
			n.eventStream = true
		}
		if q > bestQ || (q == bestQ && pos < bestPos) {
			best, bestQ, bestPos = media, q, pos
		}
	}
	n.media = best
	return n
}

// quality is the quality ranges give typ/sub, and the position of the
// range that gives it; ok is false when no range matches.
func quality(ranges []acceptRange, typ, sub string) (q, pos int, ok bool) {
	spec := -1
	for _, r := range ranges {
		if !r.matches(typ, sub) {
			continue
		}
		if s := r.specificity(); s > spec || (s == spec && r.q > q) {
			spec, q, pos, ok = s, r.q, r.pos, true
		}
	}
	return q, pos, ok
}

// parseAccept parses Accept header values into media ranges. A bare "*"
// (sent by some old clients) reads as */*.
func parseAccept(values []string) []acceptRange {
	var ranges []acceptRange
	for _, v := range values {
		for _, part := range splitOutsideQuotes(v, ',') {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if part == "*" || strings.HasPrefix(part, "*;") {
				part = "*/*" + part[1:]
			}
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			typ, sub, ok := strings.Cut(mt, "/")
			if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
				continue
			}
			r := acceptRange{typ: typ, sub: sub, q: 1000, pos: len(ranges)}
			if raw, ok := params["q"]; ok {
				q, err := strconv.ParseFloat(raw, 64)
				if err != nil || q < 0 || q > 1 {
					continue
				}
				r.q = int(q*1000 + 0.5)
				delete(params, "q")
			}
			r.params = len(params) > 0
			ranges = append(ranges, r)
		}
	}
	return ranges
}

// splitOutsideQuotes splits s at sep where sep is not inside a quoted
// string (a parameter's value may hold commas).
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
