package webhooks_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/webhooks"
)

// TestSignatureVerifies: what Sign signs, Verify accepts; a body changed
// by a byte, another secret, a timestamp older (or newer) than the
// tolerance, and a header without a timestamp or a v1 are refused; of
// several v1 signatures (a rotation) one matching is enough.
func TestSignatureVerifies(t *testing.T) {
	body := []byte(`{"id":"e1","type":"procedure.created"}`)
	now := time.Now()
	signed := webhooks.Sign(secret, now, body)
	other := webhooks.Sign("whsec_other", now, body)
	for _, tc := range []struct {
		name      string
		header    string
		body      []byte
		secret    string
		tolerance time.Duration
		want      error
	}{
		{"signed", signed, body, secret, 0, nil},
		{"tampered body", signed, []byte(strings.Replace(string(body), "e1", "e2", 1)), secret, 0, webhooks.ErrBadSignature},
		{"another secret", signed, body, "whsec_other", 0, webhooks.ErrBadSignature},
		{"old timestamp", webhooks.Sign(secret, now.Add(-6*time.Minute), body), body, secret, 0, webhooks.ErrOldSignature},
		{"old timestamp within a longer tolerance", webhooks.Sign(secret, now.Add(-6*time.Minute), body), body, secret, 10 * time.Minute, nil},
		{"future timestamp", webhooks.Sign(secret, now.Add(6*time.Minute), body), body, secret, 0, webhooks.ErrOldSignature},
		{"one of two signatures matches", other + "," + strings.Split(signed, ",")[1], body, secret, 0, nil},
		{"no timestamp", strings.Split(signed, ",")[1], body, secret, 0, webhooks.ErrNoSignature},
		{"no signature", strings.Split(signed, ",")[0], body, secret, 0, webhooks.ErrNoSignature},
		{"not hex", strings.Split(signed, ",")[0] + ",v1=zz", body, secret, 0, webhooks.ErrNoSignature},
		{"empty", "", body, secret, 0, webhooks.ErrNoSignature},
	} {
		if err := webhooks.Verify(tc.secret, tc.header, tc.body, tc.tolerance); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if !strings.HasPrefix(signed, "t=") || !strings.Contains(signed, ",v1=") || len(strings.Split(signed, "v1=")[1]) != 64 {
		t.Errorf("header %q: want t=<unix seconds>,v1=<64 hex digits>", signed)
	}
}
