package webhooks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/webhooks"
)

// shellExample is the block docs/webhooks.md gives receivers to verify a
// delivery with openssl.
func shellExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### In a shell, with openssl")
	if !ok {
		t.Fatal("docs/webhooks.md has no shell example")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the shell example is not a sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

// TestShellVerification runs docs/webhooks.md's openssl example against
// signatures made by Sign: it accepts a delivery as signed, and refuses a
// changed body, another secret and an old timestamp.
func TestShellVerification(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("openssl is not installed: the documented verification cannot be checked")
		}
		t.Skip("no openssl")
	}
	script := shellExample(t)
	const secret = "whsec_c2hlbGwgZXhhbXBsZSBzZWNyZXQ"
	body := []byte(`{"id":"01a2","type":"procedure.updated","changes":[{"field":"name","before":"a b","after":"c"}]}` + "\n")
	for _, tc := range []struct {
		name   string
		signed []byte
		secret string
		at     time.Time
		valid  bool
	}{
		{"as signed", body, secret, time.Now(), true},
		{"body changed", append([]byte(" "), body...), secret, time.Now(), false},
		{"another secret", body, "whsec_other", time.Now(), false},
		{"signed an hour ago", body, secret, time.Now().Add(-time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SIG="+webhooks.Sign(tc.secret, tc.at, tc.signed), "SECRET="+secret)
			out, err := cmd.CombinedOutput()
			if got := err == nil && strings.TrimSpace(string(out)) == "valid"; got != tc.valid {
				t.Fatalf("the documented check said %q (%v); want valid=%v", out, err, tc.valid)
			}
		})
	}
}
