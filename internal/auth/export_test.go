package auth

// Tracked returns how many client addresses have failures remembered and
// how many secrets are remembered as refused for good.
func (a *Authenticator) Tracked() (addresses, refused int) {
	if a.failures != nil {
		addresses = a.failures.len()
	}
	return addresses, a.refused.len()
}
