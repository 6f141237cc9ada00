package generated

// SetEdgesByGqlgen makes every edge the plugin writes resolve through
// gqlgen's field function (on) or be written (off), for the tests that
// compare the two ways' answers.
func SetEdgesByGqlgen(on bool) { edgesByGqlgen.Store(on) }
