package graph

// ReadWholeComments makes every view of comments read every column (on) or
// only those its fields show (off, the default).
func ReadWholeComments(on bool) { wholeComments.Store(on) }
