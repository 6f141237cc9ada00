package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash/crc32"
	"strings"
)

// SecretPrefix starts every token secret, so leaked secrets are easy to scan for.
const SecretPrefix = "pms_"

// The parts of a secret NewSecret makes: SecretPrefix, 256 random bits in
// base64url, and the CRC32 of those two in base62 (62⁶ > 2³²), so that a
// forged or mistyped secret is told from a real one without the database.
const (
	randomLen   = 43
	checksumLen = 6
	// SecretLen is the length of the secrets NewSecret makes (53). Older
	// releases made secrets of SecretPrefix and 43 base64url characters
	// (47 in all), without a checksum: those still authenticate, looked up
	// as before.
	SecretLen = len(SecretPrefix) + randomLen + checksumLen
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewSecret returns a fresh secret and the hash to store.
func NewSecret() (secret, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("auth: no randomness: " + err.Error())
	}
	body := SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
	secret = body + checksum(body)
	return secret, Hash(secret)
}

// checksum is the CRC32 of body in checksumLen base62 digits.
func checksum(body string) string {
	n := crc32.ChecksumIEEE([]byte(body))
	var out [checksumLen]byte
	for i := checksumLen - 1; i >= 0; i-- {
		out[i] = base62[n%62]
		n /= 62
	}
	return string(out[:])
}

// BadChecksum reports whether s claims the format of NewSecret's secrets
// (SecretLen characters starting with SecretPrefix) without ending in the
// checksum of what precedes it: no token has such a secret, so it is
// refused without a lookup. A secret of any other length (an older
// release's, or a bootstrap token an operator chose) claims nothing.
func BadChecksum(s string) bool {
	if len(s) != SecretLen || !strings.HasPrefix(s, SecretPrefix) {
		return false
	}
	body := s[:SecretLen-checksumLen]
	return s[len(body):] != checksum(body)
}

// Hash returns the stored form of secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ValidSecret reports whether s has the shape of a secret this package makes,
// or of a bootstrap token an operator chose (16–200 visible ASCII characters).
// It does not check a checksum: see BadChecksum.
func ValidSecret(s string) bool {
	if len(s) < 16 || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
