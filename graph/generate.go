// Package graph is procsvc's GraphQL face: the schema (*.graphqls), gqlgen's
// generated executor (./generated), and resolvers that translate arguments,
// call internal/core, and return its results.
package graph

//go:generate go run github.com/99designs/gqlgen generate --config ../gqlgen.yml
