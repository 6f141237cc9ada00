// Package genchoice names the choices a client makes when it asks for a
// procedure's content to be generated (generateProcedure): what the content
// is (its content type), how the document is written (its documentation
// style) and which programming language its code is in.
//
// Each value has two spellings, both kept here, once: the word the REST
// interface uses (docs/contract.md: "code", "csharp"), which is also what the
// core validates and the providers of internal/contentgen read, and the name
// of the GraphQL enum value (CODE, CSHARP), SCREAMING_CASE as GraphQL enums
// are spelled. The tables below are the one mapping between them: the
// GraphQL schema's enums are bound (gqlgen.yml) to graph/model's
// ContentType, DocStyle and Language, which turn one spelling into the
// other through these tables, and a test there fails when the schema's
// enums and the tables drift.
//
// It imports nothing of procsvc, so that all of them can depend on it.
package genchoice

// Content types.
const (
	Code     = "code"
	Standard = "standard"
	API      = "api"
	Process  = "process"
)

// Documentation styles.
const (
	Technical  = "technical"
	Simplified = "simplified"
	Detailed   = "detailed"
)

// Programming languages; Other is none of the others, or none at all.
const (
	TypeScript = "typescript"
	JavaScript = "javascript"
	Python     = "python"
	Java       = "java"
	CSharp     = "csharp"
	Other      = "other"
)

// A Choice is one value of an enumeration, spelled both ways.
type Choice struct {
	Word string // REST's word (docs/contract.md), what the core and the providers use
	Name string // the GraphQL enum value
}

// The values of each enumeration, in the order of the GraphQL schema's
// enums: the one mapping between the two spellings.
var (
	ContentTypeChoices = []Choice{
		{Code, "CODE"}, {Standard, "STANDARD"}, {API, "API"}, {Process, "PROCESS"},
	}
	DocStyleChoices = []Choice{
		{Technical, "TECHNICAL"}, {Simplified, "SIMPLIFIED"}, {Detailed, "DETAILED"},
	}
	LanguageChoices = []Choice{
		{TypeScript, "TYPESCRIPT"}, {JavaScript, "JAVASCRIPT"}, {Python, "PYTHON"},
		{Java, "JAVA"}, {CSharp, "CSHARP"}, {Other, "OTHER"},
	}
)

// The words a REST client may send, in the same order.
var (
	ContentTypes = words(ContentTypeChoices)
	DocStyles    = words(DocStyleChoices)
	Languages    = words(LanguageChoices)
)

// What a request that does not choose (or chooses no known value) gets.
const (
	DefaultContentType = Standard
	DefaultDocStyle    = Technical
	DefaultLanguage    = Other
)

func words(cs []Choice) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Word
	}
	return out
}

// WordOf is the word of the GraphQL enum value name among cs.
func WordOf(cs []Choice, name string) (string, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c.Word, true
		}
	}
	return "", false
}

// NameOf is the GraphQL enum value of word among cs.
func NameOf(cs []Choice, word string) (string, bool) {
	for _, c := range cs {
		if c.Word == word {
			return c.Name, true
		}
	}
	return "", false
}
