package inline

// AppendString is appendString, for the fuzz test comparing it with gqlgen.
var AppendString = appendString
