package core

import "context"

// SetBeforeTx makes every write of s call fn where it waits for the
// workspace lock: after its checks made before the transaction, before the
// transaction begins. Tests commit a concurrent change there to interleave
// it deterministically with a write. Set it before s is used concurrently.
func SetBeforeTx(s *Service, fn func(ctx context.Context)) { s.beforeTx = fn }
