package schema

// AppliedUpdates marks a schema whose entity gets the generated Applied
// method (ent/template/applied.tmpl): the row an UPDATE leaves, from the
// row the write read and the mutation it sent, so that a write can return
// what it stored without reading it back.
type AppliedUpdates struct{}

// Name implements schema.Annotation.
func (AppliedUpdates) Name() string { return "AppliedUpdates" }
