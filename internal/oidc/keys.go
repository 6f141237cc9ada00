package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is an issuer's JWKS, as go-oidc's RemoteKeySet but refetched on
// an unknown key id at most once per interval: RemoteKeySet refetches for
// every token whose kid it lacks (one request at a time, but as many as
// there are tokens), so a flood of made-up kids would be a flood of
// requests to the provider. A rotated-in key is found at the first token
// that uses it once the interval since the last fetch has passed.
type keySet struct {
	url      string
	client   *http.Client
	interval time.Duration
	now      func() time.Time

	// fetchMu makes one fetch at a time: the tokens that wait for it
	// find the keys it fetched and, the interval not passed, fetch none.
	fetchMu sync.Mutex

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	attempted time.Time // of the last fetch, failed or not

	fetches atomic.Int64
}

// VerifySignature is go-oidc's KeySet: the payload of a JWS signed with
// one of the issuer's keys, with an allowed algorithm.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, AllowedAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("malformed JWS: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("a JWS with more than one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	payload, known, err := verifyWith(jws, kid, keys)
	if known || payload != nil {
		return payload, err
	}
	keys, err = k.refetch(ctx)
	if err != nil {
		return nil, err
	}
	payload, known, err = verifyWith(jws, kid, keys)
	if known || payload != nil {
		return payload, err
	}
	return nil, errUnknownKey
}

// verifyWith checks jws against the key of kid (every key when kid is
// empty). known reports that a key of that kid exists: its failure is a bad
// signature, which no refetch can mend.
func verifyWith(jws *jose.JSONWebSignature, kid string, keys []jose.JSONWebKey) (payload []byte, known bool, err error) {
	for _, key := range keys {
		if kid != "" && key.KeyID != kid {
			continue
		}
		if p, err := jws.Verify(&key); err == nil {
			return p, true, nil
		}
		if kid != "" {
			return nil, true, errors.New("failed to verify signature")
		}
	}
	return nil, false, nil
}

// refetch fetches the JWKS unless a fetch was attempted less than interval
// ago, and returns the keys held after it.
func (k *keySet) refetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	now := k.now()
	k.mu.Lock()
	keys, last := k.keys, k.attempted
	k.mu.Unlock()
	if !last.IsZero() && now.Sub(last) < k.interval {
		return keys, nil
	}
	k.mu.Lock()
	k.attempted = now
	k.mu.Unlock()
	fetched, err := k.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS: %v", errUnavailable, err)
	}
	k.mu.Lock()
	k.keys = fetched
	k.mu.Unlock()
	return fetched, nil
}

// fetch reads the JWKS, skipping the keys it cannot use (other key types,
// encryption keys) rather than failing on them.
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.fetches.Add(1)
	// A fetch outlives the request that triggered it only as long as the
	// client's timeout: others may be waiting for its keys.
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, err
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) != nil || !key.IsPublic() || (key.Use != "" && key.Use != "sig") {
			continue
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// limitedBody is a response body read up to a bound: past it, reads fail.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var probe [1]byte
		if n, err := l.ReadCloser.Read(probe[:]); n == 0 && err != nil {
			return 0, err // the end, at the bound exactly
		}
		return 0, fmt.Errorf("a provider's answer longer than %d bytes", maxResponseBytes)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.ReadCloser.Read(p)
	l.left -= int64(n)
	return n, err
}
