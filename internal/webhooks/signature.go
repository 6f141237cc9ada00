package webhooks

// Signatures (docs/webhooks.md, "Verifying a delivery"): Stripe's scheme.
// Each attempt is signed afresh at the time it is sent, so that a receiver
// can refuse a replay of an old request by its timestamp alone.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	HeaderSignature  = "Procsvc-Signature"
	HeaderEventID    = "Procsvc-Event-Id"
	HeaderEventType  = "Procsvc-Event-Type"
	HeaderDeliveryID = "Procsvc-Delivery-Id"
	UserAgent        = "procsvc-webhooks/1"
)

// DefaultTolerance is the age of a signature Verify accepts when told 0:
// Stripe's five minutes.
const DefaultTolerance = 5 * time.Minute

// Sign returns the Procsvc-Signature header of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>". The key
// is the endpoint's secret as given to the receiver, "whsec_…" included.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Why Verify refuses a request.
var (
	ErrNoSignature  = errors.New("webhooks: no valid Procsvc-Signature header")
	ErrBadSignature = errors.New("webhooks: no signature matches the body")
	ErrOldSignature = errors.New("webhooks: the signature's timestamp is outside the tolerance")
)

// Verify checks a delivery as its receiver got it: header is the
// Procsvc-Signature header, body the raw request body (before any JSON
// decoding), tolerance how far the signature's timestamp may be from the
// receiver's clock (0: DefaultTolerance). Any one v1 signature matching is
// enough, so that a receiver keeps working through a secret's rotation
// when the header carries one per secret. It compares in constant time.
//
// Receivers in Go may copy this function (and mac) as they are: they use
// the standard library only.
func Verify(secret, header string, body []byte, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var (
		ts   string
		sigs [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil && len(sig) == sha256.Size {
				sigs = append(sigs, sig)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	if age := time.Since(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return ErrOldSignature
	}
	want := mac(secret, ts, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrBadSignature
}
