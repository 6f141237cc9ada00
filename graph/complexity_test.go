package graph_test

// The complexity of an operation prices what its response can hold, in
// objects: each object 1 plus what it selects, a list of objects its most
// elements times that, so nested lists multiply (docs/api.md). The rate
// limit charges it.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/procsvc/procsvc/graph"
	"github.com/procsvc/procsvc/graph/generated"
	"github.com/procsvc/procsvc/graph/gqlhttp"
	"github.com/procsvc/procsvc/internal/apitest"
	"github.com/procsvc/procsvc/internal/dbtest"
)

var schema = generated.NewExecutableSchema(generated.Config{Resolvers: graph.NewResolver(nil)}).Schema()

// complexity is the complexity of query's one operation with vars.
func complexity(t *testing.T, query string, vars map[string]any) int {
	t.Helper()
	doc, err := gqlparser.LoadQuery(schema, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	n, gerr := gqlhttp.Complexity(context.Background(), &graphql.OperationContext{Doc: doc, Variables: vars}, doc.Operations[0])
	if gerr != nil {
		t.Fatal(gerr)
	}
	return n
}

func TestComplexity(t *testing.T) {
	const id = `"01900000-0000-7000-8000-000000000001"`
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		want        int
	}{
		// Objects count, scalars ride with their object.
		{"Field", `{ viewer { id name } }`, nil, 1},
		{"PageOfIds", `{ procedures(first: 100) { nodes { id } } }`, nil, 101},
		{"DefaultPage", `{ procedures { nodes { id } } }`, nil, 21},
		{"PageByVariable", `query($n: Int) { procedures(first: $n) { nodes { id } } }`, map[string]any{"n": 50}, 51},
		{"LastCountsLikeFirst", `{ procedures(last: 10) { nodes { id } } }`, nil, 11},
		// pageInfo once; an edge and its node are two objects.
		{"Connection", `{ procedures(first: 10) { totalCount pageInfo { hasNextPage } edges { cursor node { id name } } nodes { id } } }`, nil,
			1 + 1 + 10*(1+1) + 10},
		{"OtherConnectionDefault", `{ projects { nodes { id name } } }`, nil, 1 + 100},
		// Nested connections multiply: a procedure's comments count their
		// default page (20) unless first or last says otherwise, plus their
		// connection.
		{"NestedComments", `{ procedures(first: 20) { nodes { comments { nodes { text } } } } }`, nil, 1 + 20*(1+1+20)},
		{"NestedCommentsLast", `{ procedures(first: 20) { nodes { comments(last: 3) { nodes { text author { name } } } } } }`, nil, 1 + 20*(1+1+3*(1+1))},
		{"CommentsFirst", `{ procedure(id: ` + id + `) { comments(first: 5) { nodes { id } } } }`, nil, 1 + 1 + 5},
		{"CommentsByVariable", `query($n: Int) { procedure(id: ` + id + `) { comments(last: $n) { nodes { id } } } }`, map[string]any{"n": 7}, 1 + 1 + 7},
		{"NestedProcedures", `{ projects(first: 20) { nodes { procedures(first: 10) { totalCount nodes { id } } } } }`, nil, 1 + 20*(1+1+10)},
		{"ProjectDashboard", `{ projects(first: 20) { nodes { name procedures(first: 10) { totalCount nodes { name category { name } doer { name } project { name }
			comments(first: 5) { totalCount nodes { text } } } } } } }`, nil, 1 + 20*(1+1+10*(1+3+1+5))},
		{"AssignedProcedures", `{ viewer { assignedProcedures(last: 5) { edges { node { id } } } } }`, nil, 1 + 1 + 5*2},
		{"NodesByIds", `{ nodes(ids: [` + id + `, "b", "c"]) { id } }`, nil, 3},
		{"NodesByVariable", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": []any{"a", "b"}}, 2},
		// Fragments of every type count in full (the most an element can
		// select).
		{"NodesWithFragments", `{ nodes(ids: ["a", "b"]) { id ... on Procedure { comments(first: 2) { nodes { id } } } ... on Project { name } } }`, nil,
			2 * (1 + 1 + 2)},
		{"FragmentSpread", `{ procedure(id: ` + id + `) { ...P } } fragment P on Procedure { id comments { nodes { id } } }`, nil, 1 + 1 + 20},
		{"Aliases", `{ a: procedure(id: ` + id + `) { content } b: procedure(id: ` + id + `) { content } }`, nil, 2},
		{"Tokens", `{ tokens { id name } }`, nil, 100},
		// Every endpoint a workspace may hold; kinds, a list of strings,
		// rides with its endpoint.
		{"Webhooks", `{ webhooks { id kinds } }`, nil, 50},
		{"WebhookDeliveries", `{ webhook(id: ` + id + `) { deliveries(first: 10) { totalCount nodes { id state } } } }`, nil, 1 + 1 + 10},
		{"WebhookDeliveriesDefault", `{ webhook(id: ` + id + `) { deliveries { edges { node { id } } } } }`, nil, 1 + 1 + 100*2},
		{"EveryWebhooksDeliveries", `{ webhooks { deliveries(first: 20) { nodes { id } } } }`, nil, 50 * (1 + 1 + 20)},
		{"Introspection", `{ __schema { types { name fields { name } } } __type(name: "Procedure") { fields { name } } }`, nil, 0},
		{"Typename", `{ __typename }`, nil, 0},
		{"Mutation", `mutation { addComment(input: {procedureId: ` + id + `, text: "t"}) { id text } }`, nil, 1},
		{"Subscription", `subscription { procedureEvents { kind procedure { comments { nodes { text } } } } }`, nil, 1 + 1 + 1 + 20},
		// The change log: the events list's default page is 100, a
		// history's 20 (nested, it multiplies); an event's changes count
		// the most fields a write logs (12), its actor and member one each.
		{"EventsDefault", `{ events { totalCount nodes { id kind version } } }`, nil, 1 + 100},
		{"EventsWithEverything", `{ events(first: 50, afterVersion: 3, filter: {kinds: [PROCEDURE_UPDATED]}, order: ASC) { pageInfo { endCursor }
			edges { cursor node { id actor { member { name } tokenId } changes { field before after } } } } }`, nil, 1 + 1 + 50*(1+1+(1+1)+12)},
		{"HistoryDefault", `{ procedure(id: ` + id + `) { history { totalCount nodes { kind } } } }`, nil, 1 + 1 + 20},
		{"HistoryOfAPage", `{ procedures(first: 20) { nodes { history(first: 5) { nodes { kind changes { field } } } } } }`, nil, 1 + 20*(1+1+5*(1+12))},
		// The figures docs/api.md and the README give.
		{"DocsViewer", `{ viewer { id } }`, nil, 1},
		{"DocsThreePages", `{ a: procedures(first: 100) { nodes { id } } b: procedures(first: 100) { nodes { id } } c: projects(first: 100) { nodes { id } } }`, nil, 303},
		{"DocsCommentsOfAPage", `{ procedures { nodes { comments(last: 5) { nodes { text } } } } }`, nil, 141},
		{"ReadmeQuickstart", `{ viewer { name role } procedures(first: 10) { totalCount nodes { shortId name state dueAt category { name } doer { name } project { name } comments(last: 3) { nodes { text } } } } }`, nil, 82},
		{"ReadmeBoard", `query Board { procedures(first: 50, filter: {states: [TODO, IN_PROGRESS], doerIds: [null, "01900000-0000-7000-8000-000000000002"], search: "keys"}, orderBy: {field: DUE_AT, direction: ASC}) {
			totalCount pageInfo { hasNextPage endCursor } edges { cursor node { shortId name position doer { name } comments(last: 3) { nodes { text author { name } } } } } } }`, nil, 502},
		{"ReadmeDashboard", `query Dashboard { projects(first: 20) { nodes { name procedures(first: 10, filter: {priorities: [HIGH, MEDIUM]}) { totalCount nodes {
			shortId name state category { name } doer { name } comments(last: 5) { totalCount nodes { text } } } } } }
			viewer { assignedProcedures(first: 5, filter: {states: [TODO]}) { totalCount nodes { shortId name } } } }`, nil, 1 + 20*(1+1+10*(1+1+1+1+5)) + 1 + 1 + 5},
		{"ReadmeBoardAllComments", `{ procedures(first: 50) {
			totalCount pageInfo { hasNextPage endCursor } edges { cursor node { shortId name position doer { name } comments { nodes { text author { name } } } } } } }`, nil, 2202},
		{"DocsHundredWithEverything", `{ procedures(first: 100) { totalCount pageInfo { hasNextPage endCursor } nodes {
			id shortId name priority state content categoryId doerId creatorId position dueAt createdAt updatedAt projectId workspaceId captureId displayVideo isFineTunedData
			category { id name } doer { id name email } project { id name } comments(last: 3) { nodes { id text createdAt } } } } }`, nil, 802},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := complexity(t, tc.query, tc.vars); got != tc.want {
				t.Fatalf("complexity %d, want %d", got, tc.want)
			}
		})
	}
}

// TestEveryListIsPriced: a list field added to the schema must be given a
// rule (gqlhttp/complexity.go), or it would be priced as one element.
func TestEveryListIsPriced(t *testing.T) {
	priced := map[string]bool{
		"Procedure.comments": true, "Query.nodes": true, "Query.tokens": true, "Query.webhooks": true, "Event.changes": true,
	}
	for _, def := range schema.Types {
		if def.Kind != ast.Object || strings.HasPrefix(def.Name, "__") {
			continue
		}
		for _, f := range def.Fields {
			if f.Type.Elem == nil || strings.HasPrefix(f.Name, "__") {
				continue
			}
			if elem := schema.Types[f.Type.Name()]; elem != nil && (elem.Kind == ast.Scalar || elem.Kind == ast.Enum) {
				continue // a list of values (WebhookEndpoint.kinds) rides with its object
			}
			name := def.Name + "." + f.Name
			connection := strings.HasSuffix(def.Name, "Connection") && (f.Name == "edges" || f.Name == "nodes")
			if !priced[name] && !connection {
				t.Errorf("%s is a list without a rule of complexity", name)
			}
		}
	}
	// A priced list answers its most elements.
	if got := complexity(t, `{ tokens { id } }`, nil); got != gqlhttp.MaxPageSize {
		t.Fatalf("tokens: %d", got)
	}
}

// TestComplexityLimitThroughNesting: nested lists reach the limit that
// either alone stays far under, refused before anything runs.
func TestComplexityLimitThroughNesting(t *testing.T) {
	s := apitest.Start(t, dbtest.Open(t, "sqlite"))
	w := s.NewWorkspace(t, "Nest", "NEST")
	for _, q := range []string{
		`{ procedures(first: 20) { nodes { id } } }`,
		`{ procedures(first: 20) { nodes { comments(last: 50) { nodes { text } } } } }`,
		`{ procedures(first: 100) { nodes { id } } }`,
	} {
		if r := s.GraphQL(t, w.ViewToken, q, nil); len(r.Errors) > 0 {
			t.Fatalf("%s: %+v", q, r.Errors)
		}
	}
	before := s.DB.Statements()
	if r := s.GraphQL(t, w.ViewToken, `{ __typename }`, nil); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	auth := s.DB.Statements() - before
	before = s.DB.Statements()
	r := s.GraphQL(t, w.ViewToken, `{ procedures(first: 100) { nodes { comments(first: 30) { nodes { text } } } } }`, nil)
	wantError(t, r, "validation_failed")
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Errors[0].Message, "complexity 3201") {
		t.Fatalf("status %d: %+v", r.Status, r.Errors)
	}
	if ran := s.DB.Statements() - before; ran != auth {
		t.Fatalf("a refused operation ran %d statements, authentication %d", ran, auth)
	}
}
