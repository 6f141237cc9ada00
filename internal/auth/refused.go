package auth

import (
	"sync"

	"github.com/procsvc/procsvc/internal/apperr"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultMaxRefused bounds the secrets remembered as refused for good
// (some 190 bytes each, so about 3 MiB at most); the least recently
// refused is dropped first.
const DefaultMaxRefused = 1 << 14

// refusedSecrets remembers the hashes of secrets a lookup refused
// disconnected, with the reason it gave. Such a refusal is permanent: a revocation is never undone,
// a member's removal revokes their tokens and is never undone, an expiry
// is never moved, and a secret's hash is unique and immutable. So a flood
// of one revoked token costs one lookup.
type refusedSecrets struct {
	mu     sync.Mutex
	hashes *simplelru.LRU[[32]byte, apperr.Reason]
}

func newRefusedSecrets(size int) *refusedSecrets {
	hashes, err := simplelru.NewLRU[[32]byte, apperr.Reason](max(size, 1), nil)
	if err != nil {
		panic("auth: " + err.Error()) // only for a size below 1
	}
	return &refusedSecrets{hashes: hashes}
}

// reason returns why the secret of hash sum was refused, if it was.
func (r *refusedSecrets) reason(sum [32]byte) (apperr.Reason, bool) {
	if r.hashes == nil { // remembers nothing (the benchmark without it)
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hashes.Get(sum)
}

func (r *refusedSecrets) add(sum [32]byte, reason apperr.Reason) {
	if r.hashes == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hashes.Add(sum, reason)
}

func (r *refusedSecrets) len() int {
	if r.hashes == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hashes.Len()
}
