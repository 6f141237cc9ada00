package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent/token"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/idempotency"
	"github.com/procsvc/procsvc/internal/viewer"
)

// wantNoSecretStored fails when a stored key's body holds a bearer secret.
func wantNoSecretStored(t *testing.T, db *database.DB) {
	t.Helper()
	rows, err := db.Client.IdempotencyKey.Query().All(viewer.System(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if bytes.Contains(row.Body, []byte(auth.SecretPrefix)) {
			t.Fatalf("key %q stored a secret: %s", row.Key, row.Body)
		}
	}
}

// TestSecretResponsesAreNotKept: a keyed createToken is answered with its
// secret, but the response is not stored (secrets are kept only as hashes),
// however the root field is reached (alias, inline fragment, fragment
// spread); a retry with the key is 409 conflict saying so and creates no
// second token.
func TestSecretResponsesAreNotKept(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		for i, q := range []string{
			`mutation { createToken(input: {name: "ci0"}) { secret token { id } } }`,
			`mutation { t: createToken(input: {name: "ci1"}) { s: secret } }`,
			`mutation { ... on Mutation { createToken(input: {name: "ci2"}) { secret } } }`,
			`mutation M { ...F } fragment F on Mutation { createToken(input: {name: "ci3"}) { secret } }`,
		} {
			name, key := fmt.Sprintf("ci%d", i), fmt.Sprintf("tok-%d", i)
			body := gqlBody(q, nil)
			first := send(t, e.s, "POST", "/graphql", e.ws.AdminToken, body, key)
			if first.status != http.StatusOK || !bytes.Contains(first.body, []byte(`"`+auth.SecretPrefix)) || first.replayed() {
				t.Fatalf("%s: %d %s", name, first.status, first.body)
			}
			wantNoSecretStored(t, db)
			again := send(t, e.s, "POST", "/graphql", e.ws.AdminToken, body, key)
			wantGraphQLKeyError(t, again, http.StatusConflict, "conflict", "the response held a secret and was not kept; list tokens or webhooks to find the one created")
			if bytes.Contains(again.body, []byte(auth.SecretPrefix)) {
				t.Fatalf("%s: the retry showed a secret: %s", name, again.body)
			}
			n, err := db.Client.Token.Query().Where(token.Name(name)).Count(viewer.System(context.Background()))
			if err != nil || n != 1 {
				t.Fatalf("%s: %d tokens (%v), want 1", name, n, err)
			}
		}
	})
}

// TestSecretShapedResponsesAreNotKept: whatever the request, a response
// holding a string shaped like a secret is not stored; the retry is 409.
func TestSecretShapedResponsesAreNotKept(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		secret := `"` + auth.SecretPrefix + strings.Repeat("a", 43) + `"`
		ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"data":{"x":{"s":%s}}}`, secret)
		})
		// A persisted query sent by hash alone: its root fields are not
		// known before the executor.
		body := `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`
		if a := ks.post(t, "/graphql", body, "apq"); a.status != 200 || !strings.Contains(string(a.body), secret) {
			t.Fatalf("first: %d %s", a.status, a.body)
		}
		wantNoSecretStored(t, db)
		again := ks.post(t, "/graphql", body, "apq")
		if again.status != http.StatusConflict || strings.Contains(string(again.body), secret) || ks.runs.Load() != 1 {
			t.Fatalf("retry: %d %s (%d runs)", again.status, again.body, ks.runs.Load())
		}
	})
}

// TestOversizeResponseKeepsTheKey: a keyed create whose response is over
// MaxStoredBody is answered in full but not stored, and its key is not
// released: the retry is 409 conflict saying so and creates nothing.
func TestOversizeResponseKeepsTheKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		vars := e.createVars("big.")
		vars["in"].(map[string]any)["content"] = strings.Repeat("😀", 200_000) // 800 KB
		body := gqlBody(`mutation C($in: CreateProcedureInput!) { createProcedure(input: $in) { id c0: content c1: content } }`, vars)
		first := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, body, "big-1")
		if first.status != http.StatusOK || len(first.body) <= idempotency.MaxStoredBody || first.replayed() {
			t.Fatalf("first: %d, %d bytes %.200s", first.status, len(first.body), first.body)
		}
		again := send(t, e.s, "POST", "/graphql", e.ws.MemberToken, body, "big-1")
		if again.status != http.StatusConflict {
			t.Fatalf("retry: %d, %d bytes %.200s", again.status, len(again.body), again.body)
		}
		wantGraphQLKeyError(t, again, http.StatusConflict, "conflict", "the first response was too large to keep; fetch the record instead")
		if n := procedures(t, db, "big."); n != 1 {
			t.Fatalf("%d procedures, want 1", n)
		}
		rows, err := db.Client.IdempotencyKey.Query().All(viewer.System(context.Background()))
		if err != nil || len(rows) != 1 || len(rows[0].Body) != 0 {
			t.Fatalf("stored rows: %d (%v)", len(rows), err)
		}
	})
}

// TestHandlerEndsBeforeTheLockTimeout: a keyed handler's deadline is a
// margin (10% of the lock timeout, at most 5 s) before its claim may be
// taken over, so that its outcome is recorded before a takeover.
func TestHandlerEndsBeforeTheLockTimeout(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		var deadline time.Time
		ks := newKeyedServer(t, db, func(w http.ResponseWriter, r *http.Request) {
			deadline, _ = r.Context().Deadline()
			_, _ = w.Write([]byte(`{}`))
		})
		ks.post(t, "/procedures", `{}`, "deadline")
		limit := time.Now().Add(idempotency.DefaultLockTimeout - 5*time.Second)
		if deadline.IsZero() || deadline.After(limit) {
			t.Fatalf("handler deadline %s, want by %s", deadline, limit)
		}
	})
}

// TestRoleChangeIsAnotherRequest: the same member's request after a change
// of role is another request (409), never a replay of the response made
// under the old role.
func TestRoleChangeIsAnotherRequest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		e := newEnv(t, db)
		body := e.procBody("role.")
		claim := claimAs(t, db, e.ws, "POST", "/procedures", body, "role-1")
		if ok, err := claim.Complete(viewer.NewContext(context.Background(), viewerOf(e.ws)), idempotency.Response{Status: 201, Body: []byte(`{}`)}); !ok || err != nil {
			t.Fatalf("complete: %v %v", ok, err)
		}
		v := viewerOf(e.ws)
		v.Role = viewer.RoleViewer // demoted
		fp := idempotency.Fingerprint(v, "POST", "/procedures", body)
		_, replay, err := idempotency.New(db.Client, idempotency.Options{}).Claim(viewer.NewContext(context.Background(), v), "role-1", fp)
		var ae *apperr.Error
		if replay != nil || !errors.As(err, &ae) || ae.Code != apperr.Conflict {
			t.Fatalf("after a role change: replay %v, error %v; want 409", replay != nil, err)
		}
	})
}
