package server_test

// Reads from a standby whose replay is deliberately delayed
// (recovery_min_apply_delay): a read that names the writer's version, or
// that comes from the token that just wrote, always sees the write; any
// other read may be stale, by at most the delay. docs/operations.md,
// "Reads from standbys".

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/procsvc/procsvc/internal/pgcluster"
)

const applyDelay = 2 * time.Second

func TestReadYourWritesThroughADelayedStandby(t *testing.T) {
	pgcluster.Bin(t)
	c := pgcluster.New(t, pgcluster.Options{ApplyDelay: applyDelay})
	c.Primary.Exec(t, "CREATE DATABASE procsvc")
	waitFailover(t, 3*applyDelay, "the standby has the database", func() bool {
		var n int
		c.Standby.QueryRow(t, "SELECT count(*) FROM pg_database WHERE datname = 'procsvc'", &n)
		return n == 1
	})
	reads := c.Standby.URL("procsvc") + "&target_session_attrs=standby"

	t.Run("Headers", func(t *testing.T) {
		// No per-token memory: only X-Min-Version asks for the write.
		base := startServe(t, "--database-url="+c.Primary.URL("procsvc"), "--migrate", "--database-read-url="+reads, "--read-your-writes=0")
		waitForDemo(t, c)
		refs := procedureRefs(t, base)
		stale := 0
		for i := range 8 {
			name := fmt.Sprintf("rw-%d", i)
			shortID, version := createViaREST(t, base, name, refs)
			if version <= 0 {
				t.Fatalf("a write answered without %s", "X-Workspace-Version")
			}
			// Without the writer's version: the standby answers, maybe
			// not knowing the write yet. (First: once a read has found
			// it, the response cache answers later reads with it, which
			// is never staler than the standby.)
			if code := getProcedure(t, base, shortID, nil); code == http.StatusNotFound {
				stale++
			} else if code != http.StatusOK {
				t.Fatalf("read without X-Min-Version: %d", code)
			}
			// With it: never stale.
			if code := getProcedure(t, base, shortID, map[string]string{"X-Min-Version": strconv.FormatInt(version, 10)}); code != http.StatusOK {
				t.Fatalf("read with X-Min-Version %d missed the write %s: %d", version, shortID, code)
			}
		}
		t.Logf("%d of 8 reads without X-Min-Version were stale", stale)
		if stale == 0 {
			t.Fatal("no read without X-Min-Version was stale: reads do not go to the delayed standby")
		}
		// Stale by at most the delay: a write is seen once it has passed.
		shortID, _ := createViaREST(t, base, "late", refs)
		written := time.Now()
		waitFailover(t, applyDelay+3*time.Second, "a read without X-Min-Version sees the write", func() bool {
			return getProcedure(t, base, shortID, nil) == http.StatusOK
		})
		if lag := time.Since(written); lag > applyDelay+2*time.Second {
			t.Fatalf("the write was seen %s after it: more than the delay", lag)
		}

		// GraphQL: the mutation's extension carries the version; a query
		// with it sees the write, whatever the standby lags.
		version := graphqlCreate(t, base, refs)
		body := `{"query":"{ procedures(first: 1, filter: {search: \"graphql-rw\"}) { totalCount } }"}`
		code, answer := postGraphQL(t, base, body, map[string]string{"X-Min-Version": strconv.FormatInt(version, 10)})
		if code != http.StatusOK || !bytes.Contains(answer, []byte(`"totalCount":1`)) {
			t.Fatalf("query with X-Min-Version %d: %d %s", version, code, answer)
		}
		// A malformed X-Min-Version is refused, never guessed.
		if code, answer := postGraphQL(t, base, body, map[string]string{"X-Min-Version": "latest"}); code != http.StatusBadRequest || !bytes.Contains(answer, []byte("bad_request")) {
			t.Fatalf("X-Min-Version: latest answered %d %s", code, answer)
		}
	})

	t.Run("TokenMemory", func(t *testing.T) {
		// The default: the server remembers the token's last write.
		base := startServe(t, "--database-url="+c.Primary.URL("procsvc"), "--database-read-url="+reads)
		waitForDemo(t, c)
		refs := procedureRefs(t, base)
		for i := range 5 {
			shortID, _ := createViaREST(t, base, fmt.Sprintf("mem-%d", i), refs)
			if code := getProcedure(t, base, shortID, nil); code != http.StatusOK {
				t.Fatalf("the token that wrote %s did not read it: %d", shortID, code)
			}
		}
	})
}

// waitForDemo waits until the standby has replayed the first start's demo
// data, which procedureRefs reads from it: the workspace, then its project,
// category and procedure, each written in a transaction of its own. (Waiting
// for the workspace alone let procedureRefs find no project on a loaded
// machine, the project's commit not yet replayed.)
func waitForDemo(t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	waitFailover(t, 3*applyDelay, "the standby has the demo data", func() bool {
		return standbyHas(t, c, "SELECT count(*) FROM procedures") > 0
	})
}

func standbyHas(t *testing.T, c *pgcluster.Cluster, query string) int {
	t.Helper()
	var n int
	db := openURL(t, c.Standby.URL("procsvc"))
	defer db.Close()
	if err := db.QueryRow(query).Scan(&n); err != nil {
		return 0
	}
	return n
}

// procedureRefs is the JSON of the references a new procedure needs.
func procedureRefs(t *testing.T, base string) string {
	t.Helper()
	return fmt.Sprintf(`"projectId":%q,"categoryId":%q,"doerId":%q`,
		firstID(t, base, "/projects"), firstID(t, base, "/categories"), firstID(t, base, "/members"))
}

// exchange sends an authorized request (a JSON body when body is not
// empty) with header, and returns the answer.
func exchange(t *testing.T, method, url, body string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(authorized(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// createViaREST creates a procedure and returns its shortId and the
// version the write committed (X-Workspace-Version).
func createViaREST(t *testing.T, base, name, refs string) (string, int64) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,%s,"priority":"LOW","state":"TODO","dueAt":"2027-01-01T09:00:00Z","content":"x"}`, name, refs)
	code, header, b := exchange(t, http.MethodPost, base+"/procedures", body, nil)
	if code != http.StatusOK {
		t.Fatalf("create: %d %s", code, b)
	}
	var p struct {
		ShortID string `json:"shortId"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	version, _ := strconv.ParseInt(header.Get("X-Workspace-Version"), 10, 64)
	return p.ShortID, version
}

func getProcedure(t *testing.T, base, shortID string, header map[string]string) int {
	t.Helper()
	code, _, _ := exchange(t, http.MethodGet, base+"/procedures/"+shortID, "", header)
	return code
}

func postGraphQL(t *testing.T, base, body string, header map[string]string) (int, []byte) {
	t.Helper()
	code, _, b := exchange(t, http.MethodPost, base+"/graphql", body, header)
	return code, b
}

// graphqlCreate creates a procedure named graphql-rw by GraphQL and returns
// the version of its extension.
func graphqlCreate(t *testing.T, base, refs string) int64 {
	t.Helper()
	in := fmt.Sprintf(`{"name":"graphql-rw",%s,"priority":"LOW","state":"TODO","dueAt":"2027-01-01","content":"x"}`, refs)
	body := fmt.Sprintf(`{"query":"mutation($in: CreateProcedureInput!) { createProcedure(input: $in) { shortId } }","variables":{"in":%s}}`, in)
	code, answer := postGraphQL(t, base, body, nil)
	var resp struct {
		Extensions struct {
			WorkspaceVersion int64 `json:"workspaceVersion"`
		} `json:"extensions"`
	}
	if code != http.StatusOK || json.Unmarshal(answer, &resp) != nil || resp.Extensions.WorkspaceVersion <= 0 {
		t.Fatalf("createProcedure: %d %s", code, answer)
	}
	return resp.Extensions.WorkspaceVersion
}

func openURL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
