package rest

// Routes returns "METHOD /path" for every endpoint served, for the tests
// that walk them all.
func Routes() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.Method + " " + rt.Path
	}
	return out
}

// MaxPageNumber is the largest page a paged list reads.
const MaxPageNumber = maxPageNumber

// CheckQuery is checkQuery, for the tests of what its errors quote.
var CheckQuery = checkQuery
