package aiclient

import (
	"context"
	"time"
)

// What the external tests (package aiclient_test) need of the internals: the
// bounds they assert, the wire request they decode, and the clock and
// randomness of retries, which they replace so that no test sleeps.

const (
	MaxReplyBytes = maxReplyBytes
	MaxBackoff    = maxBackoff
	MaxRetryAfter = maxRetryAfter
)

type ChatRequest = chatRequest

var ChatURL = chatURL

func (c *Client) SetSleep(f func(ctx context.Context, d time.Duration) error) { c.sleep = f }
func (c *Client) SetJitter(f func(n int64) int64)                             { c.jitter = f }
func (c *Client) SetNow(f func() time.Time)                                   { c.now = f }
func (c *Client) Backoff(n int) time.Duration                                 { return c.backoff(n) }
func (c *Client) RetryAfter(v string) time.Duration                           { return c.retryAfter(v) }
