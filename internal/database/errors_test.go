package database_test

import (
	"fmt"
	"testing"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	_ "github.com/procsvc/procsvc/internal/database" // registers the ent classifier
)

// TestEntErrors: ent's errors get their codes through apperr.From, however
// they are wrapped, with the cause kept for the log.
func TestEntErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		code  apperr.Code
		field string
	}{
		{"NotFound", &ent.NotFoundError{}, apperr.NotFound, ""},
		{"Constraint", &ent.ConstraintError{}, apperr.Conflict, ""},
		{"Validation", &ent.ValidationError{Name: "name"}, apperr.ValidationFailed, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ae := apperr.From(fmt.Errorf("core: %w", tc.err))
			if ae.Code != tc.code || ae.Err == nil {
				t.Fatalf("From(%v) = %s (cause %v); want %s with the cause", tc.err, ae.Code, ae.Err, tc.code)
			}
			if tc.field != "" && (len(ae.Fields) != 1 || ae.Fields[0].Field != tc.field) {
				t.Fatalf("fields %v; want %s", ae.Fields, tc.field)
			}
		})
	}
}
