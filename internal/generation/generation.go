// Package generation names the choices a client makes when it asks for a
// procedure's content to be generated (generateProcedure): what the content
// is (its content type), how the document is written (its documentation
// style) and which programming language its code is in. Each value is
// spelled here once, for the core's validation, REST's OpenAPI document
// and the providers of internal/generate; the GraphQL schema's enums must
// list the same values (a test in this package fails when they drift).
//
// It imports nothing of procsvc, so that all of them can depend on it.
package generation

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

// The values a client may send, in the order of the GraphQL schema's enums.
var (
	ContentTypes = []string{Code, Standard, API, Process}
	DocStyles    = []string{Technical, Simplified, Detailed}
	Languages    = []string{TypeScript, JavaScript, Python, Java, CSharp, Other}
)

// What a request that does not choose (or chooses no known value) gets.
const (
	DefaultContentType = Standard
	DefaultDocStyle    = Technical
	DefaultLanguage    = Other
)
