package auth

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultMaxRefused bounds the secrets remembered as refused for good
// (some 190 bytes each, so about 3 MiB at most); the least recently
// refused is dropped first.
const DefaultMaxRefused = 1 << 14

// refusedSecrets remembers the hashes of secrets a lookup refused
// disconnected. Such a refusal is permanent: a revocation is never undone,
// a member's removal revokes their tokens and is never undone, an expiry
// is never moved, and a secret's hash is unique and immutable. So a flood
// of one revoked token costs one lookup.
type refusedSecrets struct {
	mu     sync.Mutex
	hashes *simplelru.LRU[[32]byte, struct{}]
}

func newRefusedSecrets(size int) *refusedSecrets {
	hashes, err := simplelru.NewLRU[[32]byte, struct{}](max(size, 1), nil)
	if err != nil {
		panic("auth: " + err.Error()) // only for a size below 1
	}
	return &refusedSecrets{hashes: hashes}
}

func (r *refusedSecrets) has(sum [32]byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.hashes.Get(sum)
	return ok
}

func (r *refusedSecrets) add(sum [32]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hashes.Add(sum, struct{}{})
}

func (r *refusedSecrets) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hashes.Len()
}
