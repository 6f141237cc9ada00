// Package graph is procsvc's GraphQL face: the schema (*.graphqls), gqlgen's
// generated executor (./generated), and resolvers that translate arguments,
// call internal/core, and return its results. Regenerate with
// `go generate ./...` at the repository root.
package graph
