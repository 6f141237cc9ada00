package core

// A procedure's content: normalised from what a body sends, or generated
// at creation by the Generator the Service is given.

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/genchoice"
)

// contentText normalises create's content: a string is kept, null is no
// content, and any other JSON value is stored as its compact JSON text.
func contentText(val *apperr.Validation, v any) *string {
	var s string
	switch c := v.(type) {
	case nil:
		return nil
	case string:
		s = c
	case *string:
		if c == nil {
			return nil
		}
		s = *c
	case json.RawMessage:
		trimmed := bytes.TrimSpace(c)
		switch {
		case len(trimmed) == 0 || string(trimmed) == "null":
			return nil
		case trimmed[0] == '"':
			if err := json.Unmarshal(trimmed, &s); err != nil {
				val.Add("content", "must be a string or a JSON value")
				return nil
			}
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, trimmed); err != nil {
				val.Add("content", "must be a string or a JSON value")
				return nil
			}
			s = buf.String()
		}
	default:
		b, err := json.Marshal(c)
		if err != nil {
			val.Add("content", "must be a string or a JSON value")
			return nil
		}
		s = string(b)
	}
	validContent(val, s)
	return &s
}

func validContent(val *apperr.Validation, s string) { bounded(val, "content", s, MaxContentLen) }

// Generator produces a procedure's content at creation (see internal/contentgen).
type Generator interface {
	Generate(ctx context.Context, req GenerateRequest) (string, error)
}

// GenerateRequest is what a Generator is given.
type GenerateRequest struct {
	Name        string
	Content     string
	ContentType string
	DocStyle    string
	Language    string
}

// WithGenerator sets the content generator used when generateProcedure is true.
func WithGenerator(g Generator) Option { return func(s *Service) { s.generator = g } }

func (s *Service) generate(ctx context.Context, name string, content *string, in CreateProcedureInput) (string, error) {
	if s.generator == nil {
		return "", apperr.New(apperr.GenerationFailed, "content generation is not configured on this server")
	}
	req := GenerateRequest{Name: name, ContentType: genchoice.DefaultContentType, DocStyle: genchoice.DefaultDocStyle, Language: genchoice.DefaultLanguage}
	if content != nil {
		req.Content = *content
	}
	if in.ContentType != nil {
		req.ContentType = *in.ContentType
	}
	if in.DocStyle != nil {
		req.DocStyle = *in.DocStyle
	}
	if in.Language != nil {
		req.Language = *in.Language
	}
	out, err := s.generator.Generate(ctx, req)
	if err != nil {
		if ae, ok := err.(*apperr.Error); ok && ae.Code == apperr.GenerationFailed {
			return "", ae
		}
		return "", &apperr.Error{Code: apperr.GenerationFailed, Message: "content generation failed", Err: err}
	}
	return out, nil
}
