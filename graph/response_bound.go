package graph

import "github.com/procsvc/procsvc/internal/limits"

// ResponseBytes is the bound on the bytes of each response r renders, on
// both faces: MaxResponseBytes, else limits.ResponseBytes.
func (r *Resolver) ResponseBytes() int {
	if r.MaxResponseBytes > 0 {
		return r.MaxResponseBytes
	}
	return limits.ResponseBytes
}
