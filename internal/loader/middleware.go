package loader

import (
	"net/http"

	"github.com/procsvc/procsvc/internal/database"
)

// Middleware gives every request fresh loaders, as gqlgen's dataloader
// example does. It is installed after authentication, so that refused
// requests build none.
func (s *Source) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(s.Into(r.Context())))
	})
}

// Middleware gives every request fresh loaders reading through db: a
// Source's Middleware, for a handler that needs no other loaders.
func Middleware(db *database.DB, opts ...Option) func(http.Handler) http.Handler {
	return New(db, opts...).Middleware
}
