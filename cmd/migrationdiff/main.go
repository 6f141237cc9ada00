// Command migrationdiff writes the next versioned PostgreSQL migration: it
// replays ent/migrate/migrations on an empty development database, diffs the
// result against the ent schema, and writes the difference as a new SQL file
// (plus atlas.sum). Run it after changing ent/schema:
//
//	go run ./cmd/migrationdiff -name add_widgets -dev-url 'postgres://postgres@127.0.0.1:5432/procsvc_dev?sslmode=disable'
//
// The development database must exist and be empty; it is left as found.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	atlas "ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/sql/schema"
	_ "github.com/lib/pq"

	"github.com/procsvc/procsvc/ent/migrate"
)

func main() {
	name := flag.String("name", "", "migration name, e.g. add_widgets (required)")
	devURL := flag.String("dev-url", os.Getenv("PROCSVC_DEV_DATABASE_URL"), "empty PostgreSQL database to replay migrations on (env PROCSVC_DEV_DATABASE_URL)")
	dir := flag.String("dir", "ent/migrate/migrations", "migration directory")
	rehash := flag.Bool("rehash", false, "only recompute atlas.sum (after adding a hand-written migration)")
	flag.Parse()
	if *rehash {
		if err := rehashDir(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "migrationdiff:", err)
			os.Exit(1)
		}
		return
	}
	if *name == "" || *devURL == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(context.Background(), *name, *devURL, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "migrationdiff:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, name, devURL, path string) error {
	dir, err := atlas.NewLocalDir(path)
	if err != nil {
		return err
	}
	return migrate.NamedDiff(ctx, devURL, name,
		schema.WithDir(dir),
		schema.WithMigrationMode(schema.ModeReplay),
		schema.WithDialect(dialect.Postgres),
		schema.WithFormatter(atlas.DefaultFormatter),
		schema.WithDropColumn(true),
		// Hand-written indexes (trigram search) are not in the ent schema;
		// dropping an index therefore takes a hand-written migration.
		schema.WithDropIndex(false),
	)
}

func rehashDir(path string) error {
	dir, err := atlas.NewLocalDir(path)
	if err != nil {
		return err
	}
	sum, err := dir.Checksum()
	if err != nil {
		return err
	}
	return atlas.WriteSumFile(dir, sum)
}
