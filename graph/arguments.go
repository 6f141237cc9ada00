package graph

import (
	"encoding/json"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/internal/core"
)

// CheckArguments checks the arguments of the fields whose arguments bound
// what they render: a procedure's comments (commentWindow) and history
// (core.CheckHistoryWindow) and the ids of nodes (checkNodeIDs). The HTTP face runs it on every field before any
// resolver runs (its page-size limit), so that such a field costs no SQL;
// the rules stay the resolvers'.
func CheckArguments(f *ast.Field, args map[string]any) error {
	if f.ObjectDefinition == nil {
		return nil
	}
	switch f.ObjectDefinition.Name + "." + f.Name {
	case "Procedure.comments":
		_, _, err := commentWindow(intArg(args, "first"), intArg(args, "last"))
		return err
	case "Procedure.history":
		return core.CheckHistoryWindow(core.Window{First: intArg(args, "first"), Last: intArg(args, "last")})
	case "Query.nodes":
		list, ok := args["ids"].([]any)
		if !ok {
			return nil
		}
		idList := make([]string, 0, len(list))
		for _, id := range list {
			if s, ok := id.(string); ok {
				idList = append(idList, s)
			}
		}
		return checkNodeIDs(idList)
	}
	return nil
}

// IntArgument reads an Int argument, whether it came inline or through
// variables (decoded as json.Number).
func IntArgument(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
