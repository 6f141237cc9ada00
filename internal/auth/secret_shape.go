package auth

import "regexp"

// webhookSecretPrefix starts a webhook endpoint's signing secret
// (core.WebhookSecretPrefix; core imports this package, so the prefix is
// spelled here too, and TestSecretShapeMatchesEveryFormat holds the two
// together).
const webhookSecretPrefix = "whsec_"

// secretShape matches a secret as a JSON string: a token's, NewSecret's
// (with its checksum) or an older release's (without), or a webhook
// endpoint's signing secret (the base64url of 32 bytes).
var secretShape = regexp.MustCompile(`"(?:` + SecretPrefix + `[A-Za-z0-9_-]{43}(?:[0-9A-Za-z]{6})?|` +
	webhookSecretPrefix + `[A-Za-z0-9_-]{43})"`)

// HoldsSecret reports whether a JSON document holds a string shaped like a
// secret procsvc shows only once, of any format: a response that must never
// be stored (internal/idempotency keeps none). A token's secret is stored
// only as its hash; a webhook's signing secret is stored with its endpoint
// (it signs with it), but is answered only when made: a replay would show it
// again, after a rotation or a delete too.
func HoldsSecret(body []byte) bool { return secretShape.Match(body) }
