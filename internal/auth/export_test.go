package auth

// Tracked returns how many client addresses have failures remembered and
// how many secrets are remembered as refused for good.
func (a *Authenticator) Tracked() (addresses, refused int) {
	if a.failures != nil {
		addresses = a.failures.len()
	}
	return addresses, a.refused.len()
}

// WithoutRefusedSecrets remembers no refusal: every refused secret is
// looked up again (BenchmarkRefusedFlood's state=off).
func WithoutRefusedSecrets() Option {
	return func(a *Authenticator) { a.refused = &refusedSecrets{} }
}
