package respcache

import "github.com/google/uuid"

// Waiting returns how many requests wait on another's response.
func (c *Cache) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.inFlight {
		n += f.waiters
	}
	return n
}

// Len returns how many responses are stored.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Len()
}

// Held returns the bytes the cache holds, in all and of workspace.
func (c *Cache) Held(workspace uuid.UUID) (all, of int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budget.Held(), c.budget.HeldBy(workspace)
}
