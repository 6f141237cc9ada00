package rest_test

// Free-text inputs over REST: a NUL character in a search parameter is
// refused (PostgreSQL can neither store nor compare one). Malformed query
// strings and text that is not valid Unicode are in hostile_test.go.

import (
	"net/http"
	"testing"

	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// A NUL in a search parameter reached PostgreSQL, which refuses it: 500.
func TestSearchNULRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for _, path := range []string{"/procedures?search=a%00", "/procedures?q=%00", "/projects?search=%00", "/categories?q=%00", "/members?search=%00"} {
			wantError(t, e.do(t, "GET", path, e.ws.ViewToken, nil), http.StatusBadRequest, "validation_failed", "")
		}
	})
}
