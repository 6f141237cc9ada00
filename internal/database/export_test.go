package database

// MigrationLock is the advisory lock key of ApplyMigrations, for tests that
// hold it.
const MigrationLock = migrationLock
