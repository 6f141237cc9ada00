package dbtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
)

// EnvPrefix names the prefix every PostgreSQL database of a run starts
// with. A run that sets it (.ci/run does) can drop exactly its own
// databases afterwards, even those a crashed test left behind, and never
// another run's on the same server: it drops names starting with its
// prefix, and no other run's names do.
const EnvPrefix = "PROCSVC_TEST_DB_PREFIX"

// defaultPrefix is the run prefix when EnvPrefix is unset: every test
// process still names its databases apart by processToken.
const defaultPrefix = "procsvc_t_"

// maxPrefixLen leaves room, within PostgreSQL's 63-byte identifiers (a
// longer name is silently truncated, and two runs' names could meet), for
// the process token, an underscore and a counter.
const maxPrefixLen = 40

// validPrefix admits names that are safe unquoted in SQL and stay
// lower-case: PostgreSQL folds unquoted identifiers, and a name it folded
// would no longer start with the prefix.
var validPrefix = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// processToken tells this test process's databases from those of the other
// test binaries of the same run (go test runs packages in parallel, each
// in a process of its own, all with the same EnvPrefix).
var processToken = newProcessToken()

// databaseCount numbers this process's databases.
var databaseCount atomic.Int64

func newProcessToken() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("dbtest: no randomness for the database names: %v", err))
	}
	return hex.EncodeToString(b)
}

// RunPrefix returns the prefix of this run's database names: EnvPrefix if
// set (an underscore appended unless it ends with one, so that run "ci_1"
// never takes run "ci_12"'s databases for its own), else defaultPrefix.
func RunPrefix() (string, error) {
	return runPrefix(os.Getenv(EnvPrefix))
}

func runPrefix(fromEnv string) (string, error) {
	if fromEnv == "" {
		return defaultPrefix, nil
	}
	if !validPrefix.MatchString(fromEnv) {
		return "", fmt.Errorf("%s=%q: use lower-case letters, digits and underscores, starting with a letter", EnvPrefix, fromEnv)
	}
	if fromEnv[len(fromEnv)-1] != '_' {
		fromEnv += "_"
	}
	if len(fromEnv) > maxPrefixLen {
		return "", fmt.Errorf("%s=%q: at most %d characters, so that the names fit PostgreSQL's 63", EnvPrefix, fromEnv, maxPrefixLen)
	}
	return fromEnv, nil
}

// databaseName returns a new database name of the run with prefix:
// prefix, this process's token, and the process's next number.
func databaseName(prefix string) string {
	return prefix + processToken + "_" + strconv.FormatInt(databaseCount.Add(1), 10)
}
