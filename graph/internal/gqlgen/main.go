// Command gqlgen is procsvc's gqlgen entry point: gqlgen's own `generate`
// (same gqlgen.yml, same output) plus one plugin, inlineFields, run by
// `go generate ./...` (../../../generate.go). It is the documented way to add a
// plugin to gqlgen (docs: reference/plugins).
package main

import (
	"fmt"
	"os"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
)

// inlineObjects are the objects whose resolver fields are resolved on the
// goroutine marshalling the object, one after another, instead of each in a
// goroutine of its own (gqlgen's default for every resolver field). Their
// resolvers only read edges that the resolver returning the object primed
// (internal/loader: category, doer, project and comments of procedures,
// comment authors, token members), so they never wait: a goroutine per
// field costs more than the field (three goroutines per procedure of a
// page, with their stack growth). A key nobody primed still loads, batched
// with the same field of sibling objects, which marshal concurrently as
// gqlgen marshals every list.
//
// gqlgen sets Object.DisableConcurrency itself only for the Mutation root;
// this plugin sets it before the executor is generated, so the generated
// code takes gqlgen's existing non-concurrent branch for these objects.
var inlineObjects = []string{"Procedure", "Comment", "Token"}

type inlineFields struct{}

func (inlineFields) Name() string { return "procsvc-inline-fields" }

func (inlineFields) GenerateCode(data *codegen.Data) error {
	for _, name := range inlineObjects {
		o := data.Objects.ByName(name)
		if o == nil {
			return fmt.Errorf("inline fields: no object %s in the schema", name)
		}
		o.DisableConcurrency = true
	}
	return nil
}

func main() {
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen: loading config:", err)
		os.Exit(2)
	}
	if err := api.Generate(cfg, api.AddPlugin(inlineFields{})); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(3)
	}
}
