package idempotency

import (
	"net/http"

	"github.com/procsvc/procsvc/internal/viewer"
)

// Fingerprint exposes fingerprint to the external tests, which claim keys
// for requests they then send.
func Fingerprint(v *viewer.Viewer, r *http.Request, body []byte) string {
	return fingerprint(v, r, body)
}

// RunsMutation exposes runsMutation.
var RunsMutation = runsMutation

// MaxTokens is the token limit of the operation parse.
const MaxTokens = maxTokens
