package webhooks

// One attempt: the request, signed at the time it is sent, and what came
// of it. An attempt succeeds on a 2xx answer and on nothing else: another
// status (a redirect included), no answer within Timeout, an address
// refused, a connection that failed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/procsvc/procsvc/internal/egress"
	"github.com/procsvc/procsvc/internal/textclip"
)

// leaseMargin is the time an attempt leaves between its end and its
// lease's, to be recorded in: a job whose lease is closer than Timeout
// plus this is handed back instead of attempted.
const leaseMargin = 5 * time.Second

// result is an attempt's outcome, or a job handed back unattempted.
type result struct {
	job *job
	// released: not attempted (its lease too close to its end, or the
	// dispatcher closing); its lease is cleared for any replica.
	released bool
	// gone: its event cannot be sent (pruned, or unreadable); the
	// delivery fails at once.
	gone     bool
	ok       bool
	status   int // 0: no answer
	duration time.Duration
	excerpt  string
	err      string
	at       time.Time
}

// work is one worker: it attempts the jobs the lanes hand it.
func (d *Dispatcher) work() {
	defer d.workers.Done()
	for j := range d.lanes.work {
		r := d.attempt(j)
		d.lanes.done(j, !r.released && (!r.ok || r.duration > d.opts.Timeout/4))
		d.results <- r
	}
}

// attempt sends j once. It is bounded by Timeout, not by Close: an
// attempt under way when the dispatcher closes finishes, and is recorded.
func (d *Dispatcher) attempt(j *job) result {
	if j.body == nil {
		return result{job: j, gone: true, err: j.missing, at: now()}
	}
	if time.Until(j.lease) < d.opts.Timeout+leaseMargin {
		return result{job: j, released: true}
	}
	// Checked again as sent, by the rule of registration (an endpoint
	// may have been registered under an earlier rule): Go's client would
	// send a URL's user information as credentials, and a host refused
	// here is not dialled at all. The addresses a name resolves to are
	// checked as they are dialled (client.go).
	host, err := hostOf(j.endpoint.url)
	if err != nil {
		return result{job: j, err: "the endpoint's URL " + err.Error(), at: now()}
	}
	if err := egress.CheckHost(host, d.opts.AllowPrivate); err != nil {
		msg := fmt.Sprintf("%v: the endpoint's host %v", ErrRefusedAddress, err)
		if egress.CheckHost(host, true) == nil {
			msg += " (" + allowHint + ")"
		}
		return result{job: j, err: clean(textclip.Bytes(msg, ExcerptBytes)), at: now()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.endpoint.url, bytes.NewReader(j.body))
	if err != nil {
		return result{job: j, err: "the endpoint's URL is invalid: " + err.Error(), at: now()}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderEventID, j.eventID.String())
	h.Set(HeaderEventType, j.eventType)
	h.Set(HeaderDeliveryID, j.id.String())
	start := time.Now()
	h.Set(HeaderSignature, Sign(j.endpoint.secret, start, j.body))
	resp, err := d.http.Do(req)
	if err != nil {
		return result{job: j, duration: time.Since(start), err: d.describe(err), at: now()}
	}
	defer resp.Body.Close()
	// At most MaxResponseBytes are read, and of them only the excerpt
	// recorded is kept (what the memory budget charges a delivery,
	// lanes.go): the rest is read only so that the connection can be
	// reused. A longer body is cut off (and its connection not reused).
	body := make([]byte, ExcerptBytes)
	n, readErr := io.ReadFull(resp.Body, body)
	if readErr == io.EOF || readErr == io.ErrUnexpectedEOF {
		readErr = nil
	} else if readErr == nil {
		_, readErr = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes-ExcerptBytes))
	}
	r := result{job: j, status: resp.StatusCode, duration: time.Since(start), excerpt: excerpt(body[:n]), at: now(),
		ok: resp.StatusCode >= 200 && resp.StatusCode <= 299}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		r.err = "redirects are not followed: register the URL that answers"
		if loc := resp.Header.Get("Location"); loc != "" {
			r.err += " (" + textclip.Bytes(loc, 256) + ")"
		}
	case readErr != nil:
		// The status counts: a 2xx is a success whatever became of its
		// body.
		r.err = "reading the answer: " + d.describe(readErr)
	}
	return r
}

// describe says why an attempt got no answer, without the URL (which may
// hold the receiver's own token) and at most 1 KiB of it.
func (d *Dispatcher) describe(err error) string {
	var (
		ue *url.Error
		ne net.Error
	)
	switch {
	case errors.Is(err, ErrRefusedAddress):
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", d.opts.Timeout)
	case errors.As(err, &ue):
		err = ue.Err
	}
	return clean(textclip.Bytes(err.Error(), ExcerptBytes))
}

// excerpt is the start of an answer's body as recorded: at most
// ExcerptBytes of valid UTF-8 with no NUL (which PostgreSQL's text
// refuses).
func excerpt(body []byte) string {
	return clean(string(body[:min(len(body), ExcerptBytes)]))
}

func clean(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	return textclip.Prefix(s, ExcerptBytes)
}
