package gqlhttp

import (
	"encoding/json"
	"net/http"
)

// statusMapper answers gqlgen's 422 (a document that does not parse or
// validate, or an operation over a limit) with 400, as docs/api.md says;
// the body already carries the code. Every 4xx gqlgen answers is for a
// request it did not execute, whose body gets no data key (GraphQL over
// HTTP).
type statusMapper struct {
	http.ResponseWriter
	notExecuted bool
}

func (s *statusMapper) WriteHeader(code int) {
	if code == http.StatusUnprocessableEntity {
		code = http.StatusBadRequest
	}
	s.notExecuted = code >= 400 && code < 500
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusMapper) Write(b []byte) (int, error) {
	if !s.notExecuted {
		return s.ResponseWriter.Write(b)
	}
	if _, err := s.ResponseWriter.Write(withoutData(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (s *statusMapper) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withoutData drops the data key of a GraphQL response body that gqlgen
// writes (in one piece) for a request it did not execute. Anything else is
// returned as it is.
func withoutData(b []byte) []byte {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		return b
	}
	if _, ok := body["data"]; !ok {
		return b
	}
	delete(body, "data")
	out, err := json.Marshal(body)
	if err != nil {
		return b
	}
	return out
}

// getRefusal is statusMapper for GET requests that also turns gqlgen's 406
// (a GET whose operation is not a query) into refuse's answer, dropping
// gqlgen's own body.
type getRefusal struct {
	statusMapper
	refuse  func()
	refused bool
}

func (g *getRefusal) WriteHeader(code int) {
	if code == http.StatusNotAcceptable {
		g.refused = true
		g.refuse()
		return
	}
	g.statusMapper.WriteHeader(code)
}

func (g *getRefusal) Write(b []byte) (int, error) {
	if g.refused {
		return len(b), nil
	}
	return g.statusMapper.Write(b)
}
