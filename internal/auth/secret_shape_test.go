package auth_test

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
)

// TestSecretShapeMatchesEveryFormat: a response holding a secret of either
// format auth makes or made, or a webhook's signing secret (with core's
// prefix), is recognised, so never stored.
func TestSecretShapeMatchesEveryFormat(t *testing.T) {
	current, _ := auth.NewSecret()
	for _, tc := range []struct {
		name, secret string
		want         bool
	}{
		{"checksummed", current, true},
		{"older release's", auth.SecretPrefix + strings.Repeat("a", 43), true},
		{"cut short", current[:len(current)-3], false},
		{"not a secret", "pms_short", false},
		{"webhook signing secret", core.WebhookSecretPrefix + strings.Repeat("A", 43), true},
		{"webhook signing secret cut short", core.WebhookSecretPrefix + strings.Repeat("A", 42), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"data":{"s":"` + tc.secret + `"}}`
			if got := auth.HoldsSecret([]byte(body)); got != tc.want {
				t.Fatalf("HoldsSecret(%s): %v, want %v", body, got, tc.want)
			}
		})
	}
}
