// Package browsertest runs procsvc's real-browser tests, for Go tests only:
// web/e2e/*.test.mjs, run by node with npm's playwright-core driving
// Debian's chromium, against a procsvc (or a stub) the calling test serves.
// .ci/browser-test.sh installs what they need; BrowserAvailable says what is
// missing, so that a test can skip (or fail under CI).
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const modulePath = "github.com/procsvc/procsvc"

// DefaultChromium is the browser the e2e script launches unless the CHROMIUM
// environment variable names another.
const DefaultChromium = "/usr/bin/chromium"

// RepoRoot finds procsvc's repository root: the nearest directory holding
// procsvc's go.mod, walking up from the working directory (a test's package
// directory) and then from this source file's directory.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isProcsvcGoMod(b) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("browsertest: cannot find procsvc's go.mod above the working directory")
}

func isProcsvcGoMod(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
			return true
		}
	}
	return false
}

func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return DefaultChromium
}

// BrowserAvailable reports whether the real-browser test can run here:
// chromium, node and web/node_modules/playwright-core are all installed. When
// not, the reason says what is missing (.ci/browser-test.sh installs it).
func BrowserAvailable() (bool, string) {
	if _, err := os.Stat(chromiumPath()); err != nil {
		return false, fmt.Sprintf("no chromium at %s (apt-get install -y chromium)", chromiumPath())
	}
	if _, err := exec.LookPath("node"); err != nil {
		return false, "node is not on PATH"
	}
	root, err := RepoRoot()
	if err != nil {
		return false, err.Error()
	}
	if _, err := os.Stat(filepath.Join(root, "web", "node_modules", "playwright-core", "package.json")); err != nil {
		return false, "web/node_modules/playwright-core is not installed (cd web && npm ci)"
	}
	for _, name := range []string{"harness.mjs", "playground.test.mjs", "subscription.test.mjs", "refusal.test.mjs", "signin.test.mjs"} {
		if _, err := os.Stat(filepath.Join(root, "web", "e2e", name)); err != nil {
			return false, "web/e2e/" + name + " is missing"
		}
	}
	return true, ""
}

// ScreenshotDir is where a browser test saves its screenshots: the test's
// own temp dir (removed after it), or $PROCSVC_SCREENSHOT_DIR to keep them
// for a person to look at.
func ScreenshotDir(t testing.TB) string {
	if dir := os.Getenv("PROCSVC_SCREENSHOT_DIR"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// RunBrowserTest runs web/e2e/playground.test.mjs with node against the
// procsvc at baseURL (scheme://host:port, no trailing path), which must
// serve subscriptions over WebSocket: a newcomer's first hour in the
// playground. In headless chromium, failing on any request to another
// origin, any Content-Security-Policy violation and any page error, it
// checks that nothing shows as an error before the first run; that the docs
// pane says why there is no schema, with no token and with a refused one;
// that a refused token reads the same for a query and a subscription; that
// token's query runs; that the explorer pane builds a query that runs; that
// the token survives a reload, stays in the tab, and "Forget token" clears
// it; and that opening /graphql lands on the playground. token must be
// valid (any role). It saves a screenshot to screenshot (none when empty).
// On failure the error carries the script's output.
func RunBrowserTest(ctx context.Context, baseURL, token, screenshot string) error {
	return runE2E(ctx, "playground.test.mjs", baseURL, token, screenshot)
}

// RunSubscriptionBrowserTest runs web/e2e/subscription.test.mjs with node
// against the procsvc at baseURL, which must serve subscriptions: under the
// same checks as RunBrowserTest, the playground runs a procedureEvents
// subscription over a same-origin WebSocket with token, the script renames a
// procedure over HTTP and waits for the event in the result pane, then
// checks that a changed token reconnects with the new one, and that its
// refusal shows at once, in the words HTTP uses for that token. token must
// be an admin's or editor's (it writes).
func RunSubscriptionBrowserTest(ctx context.Context, baseURL, token, screenshot string) error {
	return runE2E(ctx, "subscription.test.mjs", baseURL, token, screenshot)
}

// RunRefusalBrowserTest runs web/e2e/refusal.test.mjs with node against
// the procsvc at baseURL, which must serve subscriptions: under the same
// checks as RunBrowserTest, it makes a revoked token, an expired one and a
// removed member's, and checks that the docs pane names each one's reason
// (docs/api.md#why-a-token-was-disconnected) and that a query and a
// subscription show the answer HTTP gives, reason included; then that a
// subscription cut by a revocation shows it too. token must be an admin's
// (it makes and revokes tokens, adds and removes a member).
func RunRefusalBrowserTest(ctx context.Context, baseURL, token, screenshot string) error {
	return runE2E(ctx, "refusal.test.mjs", baseURL, token, screenshot)
}

// SignIn is who signs in through the playground's Sign in button
// (RunSignInBrowserTest): a user of the identity provider at Issuer, and
// the email the provider has verified for them.
type SignIn struct {
	Issuer, Username, Password, Email string
}

// RunSignInBrowserTest runs web/e2e/signin.test.mjs with node against the
// procsvc at baseURL, started with Issuer as its --oidc-issuer and a
// --oidc-playground-client-id registered there: under the same checks as
// RunBrowserTest (but for requests to the provider's origin, which is also
// the only one connect-src names), it invites who.Email as a member with
// token (an admin's), clicks Sign in, fills the provider's login form,
// comes back signed in (the email shown, the provider's token in
// sessionStorage and the headers), runs a query as that member and a
// subscription that shows the event of a write, then signs out.
func RunSignInBrowserTest(ctx context.Context, baseURL, token string, who SignIn, screenshot string) error {
	return runE2E(ctx, "signin.test.mjs", baseURL, token, screenshot,
		"PLAYGROUND_ISSUER="+who.Issuer, "PLAYGROUND_USER="+who.Username, "PLAYGROUND_PASSWORD="+who.Password,
		"PLAYGROUND_EMAIL="+who.Email)
}

func runE2E(ctx context.Context, name, baseURL, token, screenshot string, env ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	script := filepath.Join(root, "web", "e2e", name)
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = filepath.Join(root, "web")
	cmd.Env = append(os.Environ(),
		"PLAYGROUND_URL="+strings.TrimRight(baseURL, "/"),
		"PLAYGROUND_TOKEN="+token,
	)
	cmd.Env = append(cmd.Env, env...)
	if screenshot != "" {
		cmd.Env = append(cmd.Env, "SCREENSHOT="+screenshot)
	}
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("playground browser test (node %s) failed: %w\n%s", script, err, out.String())
	}
	return nil
}
