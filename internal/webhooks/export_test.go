package webhooks

import "context"

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

// Refusal exposes why an address is refused ("" when it is not).
var Refusal = refusal
