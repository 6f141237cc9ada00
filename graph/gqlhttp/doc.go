// Package gqlhttp serves GraphQL over HTTP at /graphql: the transport guard
// (guard.go: methods, media types, authentication, the body read and
// decoded once, routing to the request chain or to a stream), content
// negotiation (negotiate.go), the executor over graph's resolvers with its
// extensions (executor.go): the document limits (limits.go), complexity
// (complexity.go) and its rate-limit cost (cost.go), the Idempotency-Key
// claim (idempotency.go), the response bound (bound_responses.go), the
// response-cache footprint (footprint.go); the check of every input value,
// inline or in variables, before anything runs (input_values.go,
// input_fields.go, input_variables.go); one error shape for every failure
// (errors.go) and status mapping (status.go); the parsed documents and
// persisted queries kept per workspace, bounded in bytes (documents.go);
// and the writer that skips gqlgen's second encoding of a response
// (direct_transport.go).
// Subscriptions' transports are graph/live's.
package gqlhttp
