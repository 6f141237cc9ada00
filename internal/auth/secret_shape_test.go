package auth_test

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/auth"
)

// TestSecretShapeMatchesEveryFormat: a response holding a secret of either
// format auth makes or made is recognised, so never stored.
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"data":{"s":"` + tc.secret + `"}}`
			if got := auth.HoldsSecret([]byte(body)); got != tc.want {
				t.Fatalf("HoldsSecret(%s): %v, want %v", body, got, tc.want)
			}
		})
	}
}
