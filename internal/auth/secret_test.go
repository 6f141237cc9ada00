package auth_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/procsvc/procsvc/internal/auth"
)

// TestNewSecretFormat: pms_, 43 base64url characters of 256 random bits,
// then a 6-character base62 checksum; fresh every time, and its hash is
// the one stored.
func TestNewSecretFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		secret, hash := auth.NewSecret()
		if len(secret) != auth.SecretLen || auth.SecretLen != 53 || !strings.HasPrefix(secret, auth.SecretPrefix) {
			t.Fatalf("secret %q: want %d characters starting %s", secret, 53, auth.SecretPrefix)
		}
		random, sum := secret[4:47], secret[47:]
		if b, err := base64.RawURLEncoding.DecodeString(random); err != nil || len(b) != 32 {
			t.Fatalf("random part %q: %d bytes, %v", random, len(b), err)
		}
		if strings.Trim(sum, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("checksum %q is not base62", sum)
		}
		if auth.BadChecksum(secret) || !auth.ValidSecret(secret) || hash != auth.Hash(secret) {
			t.Fatalf("secret %q: BadChecksum %v, ValidSecret %v", secret, auth.BadChecksum(secret), auth.ValidSecret(secret))
		}
		if seen[secret] {
			t.Fatalf("secret %q made twice", secret)
		}
		seen[secret] = true
	}
}

// TestBadChecksum: any one character of a new secret changed (to any
// other visible character) fails its checksum; secrets of another length
// (an older release's, an operator's bootstrap token) are not checked.
func TestBadChecksum(t *testing.T) {
	secret, _ := auth.NewSecret()
	for i := len(auth.SecretPrefix); i < len(secret); i++ {
		for c := byte('!'); c <= '~'; c++ {
			if c == secret[i] {
				continue
			}
			forged := secret[:i] + string(c) + secret[i+1:]
			if !auth.BadChecksum(forged) {
				t.Fatalf("%q (character %d changed) passes the checksum", forged, i)
			}
		}
	}
	for _, s := range []string{
		auth.SecretPrefix + strings.Repeat("A", 43),       // an older release's shape
		"an-operator-chosen-bootstrap-token",              // a bootstrap token
		"xyz_" + secret[4:],                               // another prefix
		auth.SecretPrefix + strings.Repeat("A", 43) + "x", // another length
	} {
		if auth.BadChecksum(s) {
			t.Fatalf("%q: checked, but it does not claim the checksummed format", s)
		}
	}
}
