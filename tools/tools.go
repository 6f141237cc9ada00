//go:build tools

// Package tools pins the code generators so that `go generate ./...` runs the
// versions recorded in go.mod.
package tools

import (
	_ "entgo.io/ent/cmd/ent"
	_ "github.com/99designs/gqlgen"
)
