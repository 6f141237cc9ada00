// Package procsvc is a self-hostable backend for workspace procedure tracking.
// The server is cmd/procsvc; this file only drives code generation, in order:
// ent first (the data model), then gqlgen (which binds to it), through
// procsvc's gqlgen entry point: gqlgen's generate plus its two plugins
// (graph/internal/gqlgen).
package procsvc

//go:generate go run entgo.io/ent/cmd/ent generate --feature intercept,sql/modifier,sql/lock,sql/versioned-migration --template ./ent/template ./ent/schema
//go:generate go run ./graph/internal/gqlgen
