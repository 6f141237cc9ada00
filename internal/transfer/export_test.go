package transfer

// SetMaxParams bounds the arguments of one INSERT, and returns what undoes it.
func SetMaxParams(n int) (undo func()) {
	was := maxParams
	maxParams = n
	return func() { maxParams = was }
}
