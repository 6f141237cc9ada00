package database_test

import (
	"os"

	"github.com/procsvc/procsvc/internal/dbtest"
)

func hasPostgres() bool { return os.Getenv(dbtest.EnvPostgres) != "" }
