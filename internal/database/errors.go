package database

import (
	"errors"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
)

func init() { apperr.RegisterClassifier(entError) }

// entError maps ent's errors to their codes, once for every caller of
// apperr.From: a record not found is not_found, a broken constraint (a
// duplicate) conflict, and a value ent's schema refuses validation_failed
// naming the field. The cause is kept for the log.
func entError(err error) *apperr.Error {
	var nf *ent.NotFoundError
	if errors.As(err, &nf) {
		return &apperr.Error{Code: apperr.NotFound, Message: "not found", Err: err}
	}
	var ce *ent.ConstraintError
	if errors.As(err, &ce) {
		return &apperr.Error{Code: apperr.Conflict, Message: "the change conflicts with existing data", Err: err}
	}
	var ve *ent.ValidationError
	if errors.As(err, &ve) {
		return &apperr.Error{Code: apperr.ValidationFailed, Message: ve.Name + ": invalid value",
			Fields: []apperr.FieldError{{Field: ve.Name, Message: "invalid value"}}, Err: err}
	}
	return nil
}
