// Package migrations embeds procsvc's versioned PostgreSQL migrations: SQL
// files named VERSION_NAME.sql, applied in version order by
// `procsvc migrate` (internal/database). New files are written by
// `go run ./cmd/migrationdiff`; applied files must never change.
package migrations

import "embed"

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS
