package gqlhttp

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/internal/apperr"
)

// A request's variables are checked twice before anything runs: by
// gqlparser's coercion, inside gqlgen's executor, which stops at its first
// refusal and says it in its own words ("must be defined"), then by
// checkVariables, which refuses more (input_values.go) and says everything
// it refuses in REST's words. Both paths end in checkVariables' error:
// inputVariables on the requests gqlparser accepted, variablesChecked on
// those it refused.

// checkVariables checks the values vars gives op's variables (as sent, or as
// gqlparser's coercion left them) and returns one validation_failed error
// naming every refused value (inputProblems.variable), or nil.
func checkVariables(schema *ast.Schema, doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) *gqlerror.Error {
	p := &inputProblems{schema: schema}
	for _, def := range op.VariableDefinitions {
		v, sent := vars[def.Variable]
		if !sent && def.DefaultValue != nil {
			// Its default was checked with the document.
			continue
		}
		p.variable("", ast.Path{ast.PathName("variable"), ast.PathName(def.Variable)}, def.Type, v)
	}
	if len(p.list) == 0 {
		return nil
	}
	for i, pr := range p.list {
		if pr.field == "" {
			name, _ := pr.path[1].(ast.PathName)
			p.list[i].field = variableField(doc, op, string(name))
		}
	}
	ae := p.err()
	return &gqlerror.Error{Message: ae.Message, Path: p.list[0].path,
		Extensions: map[string]any{"code": string(apperr.ValidationFailed), "fields": ae.Fields}}
}

// variableField names a problem of variable name's own value (or of its
// list's elements) as the same value written in the document is named: by
// the argument or input field op (or a fragment) passes it to, when that is
// one name; else by the variable's name.
func variableField(doc *ast.QueryDocument, op *ast.OperationDefinition, name string) string {
	found := ""
	for v, n := range valueNames(ast.OperationList{op}, doc.Fragments) {
		if v.Kind != ast.Variable || v.Raw != name {
			continue
		}
		if found != "" && found != n {
			return name
		}
		found = n
	}
	if found == "" {
		return name
	}
	return found
}

// inputVariables refuses an operation whose variables gqlparser accepted but
// checkVariables does not, before anything is charged (operationCost) or
// claimed (keyClaim), or runs.
type inputVariables struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = inputVariables{}

func (inputVariables) ExtensionName() string                   { return "InputVariables" }
func (inputVariables) Validate(graphql.ExecutableSchema) error { return nil }
func (inputVariables) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil || len(oc.Operation.VariableDefinitions) == 0 {
		return nil
	}
	return checkVariables(PublishedSchema(), oc.Doc, oc.Operation, oc.Variables)
}

// variablesChecked wraps a transport so that a request whose variables
// gqlparser's coercion refused is answered with checkVariables' error
// instead of gqlparser's. Nothing ran either way: the operation stopped
// before gqlgen's extensions (inputVariables and the limits) were called.
type variablesChecked struct{ graphql.Transport }

func (t variablesChecked) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	t.Transport.Do(w, r, variablesExec{exec})
}

type variablesExec struct{ graphql.GraphExecutor }

func (e variablesExec) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	oc, errs := e.GraphExecutor.CreateOperationContext(ctx, params)
	if len(errs) != 1 || oc == nil || oc.Operation == nil || oc.Doc == nil || !refusedVariable(errs[0]) {
		return oc, errs
	}
	if err := checkVariables(PublishedSchema(), oc.Doc, oc.Operation, params.Variables); err != nil {
		return oc, gqlerror.List{err}
	}
	// Not reached while checkVariables refuses all gqlparser refuses; if
	// it were, gqlparser's error still answers 400 validation_failed.
	return oc, errs
}

// refusedVariable reports whether err is gqlparser's refusal of a variable:
// its path starts at "variable" and gqlgen gave it its validation code.
func refusedVariable(err *gqlerror.Error) bool {
	code, _ := err.Extensions["code"].(string)
	return code == errcode.ValidationFailed && len(err.Path) > 1 && err.Path[0] == ast.PathName("variable")
}
