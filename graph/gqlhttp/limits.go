package gqlhttp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/internal/apperr"
)

// Limits of one GraphQL document and its operations, listed in docs/api.md.
// Every one is checked before any resolver runs, so that an over-limit
// document costs no SQL; all but the last three are checked on the parsed
// document before gqlgen validates it, because validation is where a
// hostile document costs (overlapping-field checks compare every pair of
// fields that share a response name, and the complexity walk expands
// every fragment spread).
const (
	// MaxTokens bounds a document's tokens (names, punctuation, values).
	// The playground's introspection query has under 200.
	MaxTokens = 15000
	// MaxFields bounds the fields an operation selects, each fragment
	// spread counting the fragment's fields in full (so that a chain of
	// fragments spreading the next twice counts 2^depth).
	MaxFields = 1000
	// MaxFieldRepeats bounds how many times one response name is selected
	// at one place of the result (viewer { id id } selects viewer.id
	// twice), through fragments and inline fragments too.
	MaxFieldRepeats = 25
	// MaxAliases bounds the aliased fields of an operation.
	MaxAliases = 100
	// MaxFragmentSpreads bounds an operation's fragment spreads, those
	// inside spread fragments counted each time.
	MaxFragmentSpreads = 100
	// MaxInlineFragments bounds an operation's inline fragments, counted
	// like spreads.
	MaxInlineFragments = 100
	// MaxMutationRootFields bounds the root fields of a mutation, each of
	// which commits on its own.
	MaxMutationRootFields = 20
	// MaxDocumentSelections bounds the selections (fields, fragment
	// spreads, inline fragments) of the whole document, counted like an
	// operation's but over every operation and every fragment definition:
	// validation walks each of them with the fragments it spreads.
	MaxDocumentSelections = 3000

	// MaxDepth bounds how deep an operation nests fields.
	MaxDepth = 12
	// MaxFreeWrappedTypes is how many levels of a chain of ofType fields
	// in introspection add no depth (wrappedType).
	MaxFreeWrappedTypes = 16
	// MaxComplexity bounds an operation's cost: what its response can
	// hold, nested lists multiplied (complexity.go).
	MaxComplexity = 2500
	// MaxPageSize bounds first/last on every GraphQL connection. The core
	// allows REST's other lists up to 500.
	MaxPageSize = 100
)

// saturation caps the counts below, which a fan-out of fragments would
// otherwise overflow (two saturated counts still add within 32 bits).
const saturation = 1 << 29

func satAdd(a, b int) int {
	if a+b > saturation {
		return saturation
	}
	return a + b
}

// tickEvery is how many nodes a walk visits between two checks of its
// context: every walk is linear in the document, bounded by MaxTokens, but
// none goes on for a client that has left or a request past its deadline.
const tickEvery = 256

// walk is the state every limit walk shares: the document's fragments by
// name and the request's context.
type walk struct {
	ctx       context.Context
	fragments map[string]*ast.FragmentDefinition
	visited   int
}

func newWalk(ctx context.Context, doc *ast.QueryDocument) *walk {
	w := &walk{ctx: ctx, fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments))}
	for _, f := range doc.Fragments {
		// The first of duplicate names, as validation (which refuses
		// duplicates) and ForName do.
		if _, ok := w.fragments[f.Name]; !ok {
			w.fragments[f.Name] = f
		}
	}
	return w
}

// tick counts one visited node and, every tickEvery nodes, reports the
// context's end.
func (w *walk) tick() *gqlerror.Error {
	w.visited++
	if w.visited%tickEvery != 0 || w.ctx.Err() == nil {
		return nil
	}
	return &gqlerror.Error{Message: "the request ended before its document was checked", Err: apperr.From(w.ctx.Err())}
}

func limitError(format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": string(apperr.ValidationFailed)}
	return err
}

// documentLimits refuses documents over MaxTokens and operations over the
// structural limits before gqlgen parses and validates them: it runs as an
// OperationParameterMutator, which gqlgen calls before its parse and
// validation step, on every transport (GET, POST, persisted queries).
type documentLimits struct {
	// validated is gqlgen's query cache: a document found there passed
	// these limits and validation before.
	validated graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = documentLimits{}

func (documentLimits) ExtensionName() string                   { return "DocumentLimits" }
func (documentLimits) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters checks the request's document. It runs before
// the persisted-query extension, so that a refused document is never
// stored under its hash, and a request carrying only a hash (no text) runs
// a document that passed this check when it was stored.
func (d documentLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if p.Query == "" {
		return nil
	}
	if d.validated != nil {
		if _, ok := d.validated.Get(ctx, p.Query); ok {
			return nil
		}
	}
	return CheckDocument(ctx, p.Query)
}

// CheckDocument parses query with at most MaxTokens tokens and checks the
// limits of every operation and fragment definition, in time linear in the
// document: each fragment is measured once and a spread adds its measure.
// A document that does not parse for another reason passes: gqlgen reports
// the syntax error with its location.
func CheckDocument(ctx context.Context, query string) *gqlerror.Error {
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, MaxTokens)
	if err != nil {
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && strings.Contains(gerr.Message, "token limit") {
			e := gqlerror.Errorf("the document has more than %d tokens (names, punctuation and values), the limit; send smaller operations", MaxTokens)
			errcode.Set(e, errcode.ParseFailed)
			return e
		}
		return nil
	}
	if err := refuseIncremental(doc); err != nil {
		return err
	}
	c := &counter{walk: newWalk(ctx, doc), shapes: map[string]*shape{}}
	if len(c.fragments) < len(doc.Fragments) {
		// Validation refuses this too, but walks every definition first;
		// only the first of a name is measured here.
		seen := map[string]bool{}
		for _, f := range doc.Fragments {
			if seen[f.Name] {
				return limitError("there can be only one fragment named %q", f.Name)
			}
			seen[f.Name] = true
		}
	}
	var total shape
	for _, op := range doc.Operations {
		s, err := c.set(op.SelectionSet)
		if err != nil {
			return err
		}
		if err := s.check(op); err != nil {
			return err
		}
		total.add(s, false)
	}
	// Every fragment an operation uses has been measured; validation
	// refuses the others, but walks them first, so they are refused here.
	for _, f := range doc.Fragments {
		s, used := c.shapes[f.Name]
		if !used {
			return limitError("fragment %q is never used", f.Name)
		}
		total.add(*s, false)
	}
	if n := satAdd(satAdd(total.fields, total.spreads), total.inlines); n > MaxDocumentSelections {
		return limitError("the document has %s selections (fields, fragment spreads and inline fragments) counting every operation and fragment definition, each fragment spread in full; the limit is %d", count(n), MaxDocumentSelections)
	}
	// Within these bounds, walking each operation with its fragments
	// expanded is cheap.
	for _, op := range doc.Operations {
		if err := c.repeats([]ast.SelectionSet{op.SelectionSet}, op, ""); err != nil {
			return err
		}
	}
	return nil
}

func operationName(op *ast.OperationDefinition) string {
	if op.Name != "" {
		return string(op.Operation) + " " + op.Name
	}
	return "the " + string(op.Operation)
}

// shape is what a selection set expands to, fragments spread in full.
type shape struct {
	fields, aliases, spreads, inlines int
	// root counts the fields at the set's own level, through fragments and
	// inline fragments: an operation's root fields.
	root int
}

// add adds o; flat when o's fields are at s's own level.
func (s *shape) add(o shape, flat bool) {
	s.fields = satAdd(s.fields, o.fields)
	s.aliases = satAdd(s.aliases, o.aliases)
	s.spreads = satAdd(s.spreads, o.spreads)
	s.inlines = satAdd(s.inlines, o.inlines)
	if flat {
		s.root = satAdd(s.root, o.root)
	}
}

func count(n int) string {
	if n >= saturation {
		return fmt.Sprintf("over %d", saturation)
	}
	return fmt.Sprint(n)
}

// check refuses an operation over a limit.
func (s shape) check(op *ast.OperationDefinition) *gqlerror.Error {
	name := operationName(op)
	switch {
	case op.Operation == ast.Mutation && s.root > MaxMutationRootFields:
		return limitError("%s has %s root fields, more than the limit of %d; send fewer mutations per operation", name, count(s.root), MaxMutationRootFields)
	case s.fields > MaxFields:
		return limitError("%s selects %s fields counting each fragment spread in full, more than the limit of %d", name, count(s.fields), MaxFields)
	case s.spreads > MaxFragmentSpreads:
		return limitError("%s has %s fragment spreads counting those inside fragments each time, more than the limit of %d", name, count(s.spreads), MaxFragmentSpreads)
	case s.inlines > MaxInlineFragments:
		return limitError("%s has %s inline fragments counting each fragment spread in full, more than the limit of %d", name, count(s.inlines), MaxInlineFragments)
	case s.aliases > MaxAliases:
		return limitError("%s has %s aliased fields counting each fragment spread in full, more than the limit of %d", name, count(s.aliases), MaxAliases)
	}
	return nil
}

// counter measures selection sets, each fragment once.
type counter struct {
	*walk
	// shapes holds each measured fragment's shape; nil while it is being
	// measured, so that a spread of a fragment inside itself is found.
	shapes map[string]*shape
}

func (c *counter) set(set ast.SelectionSet) (shape, *gqlerror.Error) {
	var s shape
	for _, sel := range set {
		if err := c.tick(); err != nil {
			return s, err
		}
		switch sel := sel.(type) {
		case *ast.Field:
			s.fields = satAdd(s.fields, 1)
			s.root = satAdd(s.root, 1)
			if sel.Alias != "" && sel.Alias != sel.Name {
				s.aliases = satAdd(s.aliases, 1)
			}
			sub, err := c.set(sel.SelectionSet)
			if err != nil {
				return s, err
			}
			s.add(sub, false)
		case *ast.InlineFragment:
			s.inlines = satAdd(s.inlines, 1)
			sub, err := c.set(sel.SelectionSet)
			if err != nil {
				return s, err
			}
			s.add(sub, true)
		case *ast.FragmentSpread:
			s.spreads = satAdd(s.spreads, 1)
			sub, err := c.fragment(sel.Name)
			if err != nil {
				return s, err
			}
			s.add(sub, true)
		}
	}
	return s, nil
}

// fragment measures the fragment called name, once. An unknown fragment
// measures nothing (validation reports it); a fragment that spreads itself,
// directly or not, is refused here, as validation would.
func (c *counter) fragment(name string) (shape, *gqlerror.Error) {
	if s, seen := c.shapes[name]; seen {
		if s == nil {
			return shape{}, limitError("fragment %q spreads itself", name)
		}
		return *s, nil
	}
	def := c.fragments[name]
	if def == nil {
		return shape{}, nil
	}
	c.shapes[name] = nil
	s, err := c.set(def.SelectionSet)
	if err != nil {
		return s, err
	}
	c.shapes[name] = &s
	return s, nil
}

// repeats refuses a response name selected more than MaxFieldRepeats times
// at one place, and a subscription whose root holds other than one response
// name: sets are the selection sets merged at that place (at the
// root, the operation's; below, those of the fields that share a response
// name above). This is the number validation's overlapping-fields check
// squares. The walk expands fragments, which the limits checked before
// bound. Fragments do not spread themselves: counter refused that.
func (c *counter) repeats(sets []ast.SelectionSet, op *ast.OperationDefinition, path string) *gqlerror.Error {
	var order []string
	groups := map[string][]*ast.Field{}
	var collect func(set ast.SelectionSet) *gqlerror.Error
	collect = func(set ast.SelectionSet) *gqlerror.Error {
		for _, sel := range set {
			if err := c.tick(); err != nil {
				return err
			}
			switch sel := sel.(type) {
			case *ast.Field:
				name := sel.Alias
				if name == "" {
					name = sel.Name
				}
				if _, ok := groups[name]; !ok {
					order = append(order, name)
				}
				groups[name] = append(groups[name], sel)
			case *ast.InlineFragment:
				if err := collect(sel.SelectionSet); err != nil {
					return err
				}
			case *ast.FragmentSpread:
				if def := c.fragments[sel.Name]; def != nil {
					if err := collect(def.SelectionSet); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for _, set := range sets {
		if err := collect(set); err != nil {
			return err
		}
	}
	if path == "" && op.Operation == ast.Subscription && len(order) != 1 {
		// gqlgen's executor answers anything else with no stream at all
		// (a 500 over Server-Sent Events), and gqlparser's validation
		// counts field names, not response names, so aliases pass it.
		names := order[:min(len(order), 5)]
		return limitError("%s selects %d root fields (%s); a subscription selects exactly one, counting aliases, fragments and inline fragments: open one subscription per stream",
			operationName(op), len(order), strings.Join(names, ", "))
	}
	for _, name := range order {
		fields := groups[name]
		if len(fields) > MaxFieldRepeats {
			at := "the root of " + operationName(op)
			if path != "" {
				at = path + " in " + operationName(op)
			}
			return limitError("%q is selected %d times at %s, more than the limit of %d (fragments and inline fragments included)", name, len(fields), at, MaxFieldRepeats)
		}
		var below []ast.SelectionSet
		for _, f := range fields {
			if len(f.SelectionSet) > 0 {
				below = append(below, f.SelectionSet)
			}
		}
		if len(below) > 0 {
			if err := c.repeats(below, op, strings.TrimPrefix(path+"."+name, ".")); err != nil {
				return err
			}
		}
	}
	return nil
}

// depthLimit refuses operations nested deeper than max fields.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	h := heights{walk: newWalk(ctx, oc.Doc), memo: map[spreadAt]int{}}
	depth, err := h.set(op.SelectionSet, 0)
	if err != nil {
		return err
	}
	if depth > d.max {
		return limitError("operation is nested %d levels deep, deeper than the limit of %d", depth, d.max)
	}
	return nil
}

// heights measures how deep selection sets nest fields, each fragment
// once per place in a chain of wrapped types: a spread is as deep as its
// fragment.
type heights struct {
	*walk
	memo map[spreadAt]int
}

// spreadAt is a fragment spread below chain wrapped types (wrappedType),
// counted up to MaxFreeWrappedTypes + 1: deeper, every level counts.
type spreadAt struct {
	name  string
	chain int
}

// set is how deep set nests fields, below chain wrapped types.
func (h heights) set(set ast.SelectionSet, chain int) (int, *gqlerror.Error) {
	deepest := 0
	for _, sel := range set {
		if err := h.tick(); err != nil {
			return 0, err
		}
		var d int
		var err *gqlerror.Error
		switch sel := sel.(type) {
		case *ast.Field:
			if wrappedType(sel) {
				next := min(chain+1, MaxFreeWrappedTypes+1)
				d, err = h.set(sel.SelectionSet, next)
				if next > MaxFreeWrappedTypes {
					d++
				}
			} else {
				d, err = h.set(sel.SelectionSet, 0)
				d++
			}
		case *ast.InlineFragment:
			d, err = h.set(sel.SelectionSet, chain)
		case *ast.FragmentSpread:
			d, err = h.fragment(spreadAt{sel.Name, chain})
		}
		if err != nil {
			return 0, err
		}
		deepest = max(deepest, d)
	}
	return deepest, nil
}

// wrappedType reports whether f is a type's ofType in introspection: the
// type a list or non-null type wraps. The first MaxFreeWrappedTypes of a
// chain of them add no depth: an ofType is one object, never a list, so it
// cannot multiply a response, and it is null past the schema's deepest
// wrapping (three levels here). Standard introspection (graphql-js's
// getIntrospectionQuery nests ofType nine levels deep) is what code
// generators and schema tools send; counting those levels refused it.
func wrappedType(f *ast.Field) bool {
	return f.Name == "ofType" && f.ObjectDefinition != nil && f.ObjectDefinition.Name == "__Type"
}

func (h heights) fragment(at spreadAt) (int, *gqlerror.Error) {
	if d, ok := h.memo[at]; ok {
		return d, nil // 0 while measured: validation refused cycles
	}
	def := h.fragments[at.name]
	if def == nil {
		return 0, nil
	}
	h.memo[at] = 0
	d, err := h.set(def.SelectionSet, at.chain)
	if err != nil {
		return 0, err
	}
	h.memo[at] = d
	return d, nil
}

// pageSizeLimit refuses first/last above max on any field, and the
// arguments graph.CheckArguments refuses, before any resolver (and so any SQL)
// runs.
type pageSizeLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = pageSizeLimit{}

func (pageSizeLimit) ExtensionName() string                   { return "PageSizeLimit" }
func (pageSizeLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (p pageSizeLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	ps := pageSizes{walk: newWalk(ctx, oc.Doc), max: p.max, vars: oc.Variables, seen: map[string]bool{}}
	return ps.check(op.SelectionSet)
}

// pageSizes checks the first/last arguments of selection sets, each
// fragment once: its arguments are the same wherever it is spread.
type pageSizes struct {
	*walk
	max  int
	vars map[string]any
	seen map[string]bool
}

func (p pageSizes) check(set ast.SelectionSet) *gqlerror.Error {
	for _, sel := range set {
		if err := p.tick(); err != nil {
			return err
		}
		switch s := sel.(type) {
		case *ast.Field:
			args := s.ArgumentMap(p.vars)
			for _, name := range []string{"first", "last"} {
				if n, ok := graph.IntArgument(args[name]); ok && n > int64(p.max) {
					err := limitError("%s: %s may be at most %d", s.Name, name, p.max)
					err.Extensions["fields"] = []apperr.FieldError{{Field: name, Message: fmt.Sprintf("must be at most %d", p.max)}}
					return err
				}
			}
			if err := graph.CheckArguments(s, args); err != nil {
				ae := apperr.From(err)
				gerr := limitError("%s: %s", s.Name, ae.Message)
				gerr.Extensions["fields"] = ae.Fields
				return gerr
			}
			if err := p.check(s.SelectionSet); err != nil {
				return err
			}
		case *ast.InlineFragment:
			if err := p.check(s.SelectionSet); err != nil {
				return err
			}
		case *ast.FragmentSpread:
			if p.seen[s.Name] {
				continue
			}
			p.seen[s.Name] = true
			if def := p.fragments[s.Name]; def != nil {
				if err := p.check(def.SelectionSet); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
