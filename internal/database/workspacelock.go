package database

import (
	"encoding/binary"

	"github.com/google/uuid"
)

// WorkspaceLockKey is the key of a workspace's transaction-level advisory
// lock on PostgreSQL, which every write of the workspace takes first
// (internal/core: exclusive, or shared by field updates): the last eight
// bytes of its id, which are random in the UUIDv7 ids procsvc makes. Two
// workspaces sharing a key would only serialise each other's writes.
func WorkspaceLockKey(workspaceID uuid.UUID) int64 {
	return int64(binary.BigEndian.Uint64(workspaceID[8:]))
}
