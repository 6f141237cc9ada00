package core

// Validation shared by the core's writes: enumerations, ids, text bounds
// and references, each reporting into an apperr.Validation so that one
// answer names every bad field.

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
)

// oneOf records an error under field unless s is one of allowed.
func oneOf[T ~string](val *apperr.Validation, field, s string, allowed ...T) {
	if !slices.Contains(allowed, T(s)) {
		val.Add(field, "must be one of %s", joinValues(allowed))
	}
}

// joinValues lists enum values for a message: "A, B, C".
func joinValues[T ~string](values []T) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}

// validPriority and validState check a required enum value against the
// values the ent schema declares.
func validPriority(val *apperr.Validation, field, s string) {
	if s == "" {
		val.Add(field, "is required")
		return
	}
	oneOf(val, field, s, procedure.PriorityValues()...)
}

func validState(val *apperr.Validation, field, s string) {
	if s == "" {
		val.Add(field, "is required")
		return
	}
	oneOf(val, field, s, procedure.StateValues()...)
}

// optionalID parses an id field that may be empty.
func optionalID(val *apperr.Validation, field, s string) *uuid.UUID {
	if s == "" {
		return nil
	}
	id, err := ids.Parse(s)
	if err != nil {
		val.Add(field, "must be an id")
		return nil
	}
	return &id
}

func requiredID(val *apperr.Validation, field, s string) uuid.UUID {
	if s == "" {
		val.Add(field, "is required")
		return uuid.Nil
	}
	if id := optionalID(val, field, s); id != nil {
		return *id
	}
	return uuid.Nil
}

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

func validCaptureID(val *apperr.Validation, s string) { bounded(val, "captureId", s, MaxTitleLen) }

// checkRefs confirms that the referenced category, doer (a current member)
// and project exist in the viewer's workspace (the tenancy interceptor hides
// all others), naming every offending field otherwise. It returns the
// project's name, which procedures keep a copy of for sorting.
//
// Writes run it with tx.Client() inside their transaction, after the
// workspace lock: a category or project deleted, or a doer removed, while
// the write waited is then refused like a sequential execution would refuse
// it (validation_failed naming the field), never stored (a removed doer) or
// answered as a bare foreign-key conflict, and the project name copied is
// the name as of the write. It may also run before the transaction to fail
// fast ahead of costly work (content generation), never instead.
func checkRefs(ctx context.Context, c *ent.Client, categoryID, doerID, projectID *uuid.UUID) (projectName string, err error) {
	val := &apperr.Validation{}
	if categoryID != nil {
		ok, err := c.Category.Query().Where(category.ID(*categoryID)).Exist(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if !ok {
			val.Add("categoryId", "no such category in this workspace")
		}
	}
	if doerID != nil {
		ok, err := c.Member.Query().Where(member.ID(*doerID), member.RemovedAtIsNil()).Exist(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if !ok {
			val.Add("doerId", "no such member in this workspace")
		}
	}
	if projectID != nil {
		names, err := c.Project.Query().Where(project.ID(*projectID)).Select(project.FieldName).Strings(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if len(names) == 0 {
			val.Add("projectId", "no such project in this workspace")
		} else {
			projectName = names[0]
		}
	}
	return projectName, val.Err()
}

// clearableID validates an optional reference: null or "" clears it.
func clearableID(val *apperr.Validation, field string, o Optional[string]) Optional[uuid.UUID] {
	switch {
	case !o.Set:
		return Optional[uuid.UUID]{}
	case o.Value == nil || *o.Value == "":
		return Null[uuid.UUID]()
	}
	if id := optionalID(val, field, *o.Value); id != nil {
		return Some(*id)
	}
	return Optional[uuid.UUID]{}
}
