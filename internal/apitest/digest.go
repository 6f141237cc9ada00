package apitest

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"testing"
)

// DataDigest hashes every row of every table, except the columns that
// reading itself may change (a token's lastUsedAt and the workspace version
// its update bumps). Tests compare the digests taken before and after a
// request to prove that it left the workspace's data exactly as it was.
func DataDigest(t testing.TB, db *sql.DB) string {
	t.Helper()
	h := sha256.New()
	for _, table := range []string{"workspaces", "members", "tokens", "projects", "categories", "procedures", "comments"} {
		rows, err := db.Query("SELECT * FROM " + table + " ORDER BY id")
		if err != nil {
			t.Fatalf("digest %s: %v", table, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				if c == "last_used_at" || c == "version" {
					continue
				}
				fmt.Fprintf(h, "%s.%s=%v\x00", table, c, vals[i])
			}
			h.Write([]byte{'\n'})
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}
