// Package graph is procsvc's GraphQL schema (*.graphqls), gqlgen's
// generated executor (./generated) and the resolvers: they translate
// arguments, call internal/core, prime the dataloaders for what the query
// selects, and return the core's results. The REST face (rest/) calls the
// same resolvers. Serving GraphQL over HTTP is graph/gqlhttp's job, live
// updates (subscriptions) graph/live's; neither is imported here but the
// live runtime, which the subscription resolver hands its work to.
// Regenerate with `go generate ./...` at the repository root.
package graph
