package dbtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRunPrefix(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		wantErr   bool
	}{
		{env: "", want: defaultPrefix},
		{env: "procsvc_ci_42_ab12_", want: "procsvc_ci_42_ab12_"},
		// Without the underscore, run "ci_1" would take "ci_12"'s names.
		{env: "procsvc_ci_1", want: "procsvc_ci_1_"},
		{env: "Procsvc_ci_", wantErr: true}, // PostgreSQL folds it to lower case
		{env: "procsvc-ci_", wantErr: true},
		{env: "x'; DROP DATABASE postgres; --", wantErr: true},
		{env: "1procsvc_", wantErr: true},
		{env: "p" + strings.Repeat("x", maxPrefixLen-1), wantErr: true}, // too long once _ is added
		{env: "p" + strings.Repeat("x", maxPrefixLen-2), want: "p" + strings.Repeat("x", maxPrefixLen-2) + "_"},
	} {
		got, err := runPrefix(tc.env)
		if tc.wantErr {
			if err == nil {
				t.Errorf("runPrefix(%q) = %q, want an error", tc.env, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("runPrefix(%q) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}

// postgresIdentifier is what CreatePostgres may put unquoted in SQL and
// find again in pg_database: PostgreSQL truncates names beyond 63 bytes.
var postgresIdentifier = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

func TestDatabaseNamesCarryTheRunPrefix(t *testing.T) {
	for _, env := range []string{"", "procsvc_ci_42_ab12_", "p" + strings.Repeat("x", maxPrefixLen-2)} {
		t.Setenv(EnvPrefix, env)
		prefix, err := RunPrefix()
		if err != nil {
			t.Fatal(err)
		}
		first, second := databaseName(prefix), databaseName(prefix)
		for _, name := range []string{first, second} {
			if !strings.HasPrefix(name, prefix+processToken+"_") {
				t.Errorf("%s=%q: name %q does not start with the run prefix %q and this process's token %q", EnvPrefix, env, name, prefix, processToken)
			}
			if !postgresIdentifier.MatchString(name) {
				t.Errorf("name %q is no unquoted PostgreSQL identifier of at most 63 bytes", name)
			}
		}
		if first == second {
			t.Errorf("two databases of one process are both named %q", first)
		}
	}
}

// adminDB connects to the EnvPostgres server, skipping t without one.
func adminDB(t *testing.T) *sql.DB {
	t.Helper()
	NeedPostgres(t)
	db, err := sql.Open("postgres", withSSLDefault(os.Getenv(EnvPostgres)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func databaseExists(ctx context.Context, t *testing.T, admin *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestCreatePostgresNamesItsDatabaseForTheRunAndDropsIt(t *testing.T) {
	admin := adminDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix, err := RunPrefix()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	t.Run("create", func(t *testing.T) {
		u, err := url.Parse(CreatePostgres(t))
		if err != nil {
			t.Fatal(err)
		}
		name = strings.TrimPrefix(u.Path, "/")
		if !strings.HasPrefix(name, prefix+processToken+"_") {
			t.Errorf("database %q does not start with the run prefix %q and this process's token %q", name, prefix, processToken)
		}
		if !databaseExists(ctx, t, admin, name) {
			t.Errorf("database %q is not on the server", name)
		}
	})
	if name != "" && databaseExists(ctx, t, admin, name) {
		t.Errorf("database %q outlived its test", name)
	}
}

// ciSweepSelect returns the SELECT .ci/run's cleanup feeds to \gexec, its
// psql variable :'run_prefix' made the parameter $1.
func ciSweepSelect(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<<'SQL'[^\n]*\n(.*?)\n\\gexec\n`).FindSubmatch(script)
	if m == nil {
		t.Fatal(".ci/run has no cleanup heredoc <<'SQL' … \\gexec")
	}
	query := string(m[1])
	if !strings.Contains(query, ":'run_prefix'") {
		t.Fatalf(".ci/run's cleanup does not select by :'run_prefix': %s", query)
	}
	return strings.ReplaceAll(query, ":'run_prefix'", "$1")
}

// TestCISweepTakesOnlyItsRun runs .ci/run's cleanup SELECT for one run
// beside databases of lookalike runs: one whose prefix extends this run's
// (pid 1 and pid 12), one that LIKE's wildcard _ would match. It must
// drop the run's database alone.
func TestCISweepTakesOnlyItsRun(t *testing.T) {
	admin := adminDB(t)
	query := ciSweepSelect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix, err := RunPrefix()
	if err != nil {
		t.Fatal(err)
	}
	// Under this run's own prefix, so that a crash here leaves nothing
	// outside it.
	root := databaseName(prefix) + "_"
	run := root + "1_"
	mine, longerPid, likeWildcard := run+"a", root+"12_a", root+"1xa"
	for _, name := range []string{mine, longerPid, likeWildcard} {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
				t.Errorf("drop %s: %v", name, err)
			}
		})
	}
	// The lookalikes are real: a LIKE sweep would take all three.
	var byLike int
	if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE $1 || '%'`, run).Scan(&byLike); err != nil {
		t.Fatal(err)
	}
	if byLike != 3 {
		t.Fatalf("LIKE %q%% matches %d of the three databases; the lookalikes are no test", run, byLike)
	}

	rows, err := admin.QueryContext(ctx, query, run)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var drops []string
	for rows.Next() {
		var stmt string
		if err := rows.Scan(&stmt); err != nil {
			t.Fatal(err)
		}
		drops = append(drops, stmt)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := "DROP DATABASE IF EXISTS " + mine + " WITH (FORCE)"
	if len(drops) != 1 || drops[0] != want {
		t.Errorf("the sweep of run %q issues %q; want only %q", run, drops, want)
	}
}
