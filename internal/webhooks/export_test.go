package webhooks

import (
	"context"

	"github.com/google/uuid"
)

// FanOutNow runs one fan-out batch, as the loop does when woken.
func (d *Dispatcher) FanOutNow(ctx context.Context) (more bool, err error) { return d.fanOut(d.ctx) }

// ClaimNow runs one claim, as the loop does at each poll.
func (d *Dispatcher) ClaimNow(ctx context.Context) error { return d.claim(d.ctx) }

// Held is how many deliveries the dispatcher holds (queued, being sent).
func (d *Dispatcher) Held() int {
	d.lanes.mu.Lock()
	defer d.lanes.mu.Unlock()
	return d.lanes.total
}

// HeldOf is how many deliveries of workspace ws the dispatcher holds,
// the bytes its memory budget holds for them, and the bytes of those
// queued as counted from the jobs themselves (their distinct bodies and
// jobBytes each; those being sent are not counted).
func (d *Dispatcher) HeldOf(ws uuid.UUID) (deliveries int, budget, queued int64) {
	d.lanes.mu.Lock()
	defer d.lanes.mu.Unlock()
	w := d.lanes.workspaces[ws]
	if w == nil {
		return 0, d.lanes.mem.HeldBy(ws), 0
	}
	bodies := map[uuid.UUID]bool{}
	for _, id := range w.ring {
		for _, j := range d.lanes.byID[id].queue {
			queued += jobBytes
			if j.body != nil && !bodies[j.eventID] {
				bodies[j.eventID] = true
				queued += int64(len(j.body))
			}
		}
	}
	return w.held, d.lanes.mem.HeldBy(ws), queued
}

// MemoryHeld is the bytes the dispatcher's memory budget holds, of every
// workspace, and how many reservations it refused.
func (d *Dispatcher) MemoryHeld() (bytes, refused int64) {
	return d.lanes.mem.Held(), d.lanes.mem.Refused()
}

// JobBytes is what the memory budget charges a delivery besides its body.
const JobBytes = jobBytes
