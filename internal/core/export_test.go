package core

// CountsInFlight reports, for tests, the distinct counts of totals in
// flight, the requests waiting for them, and the counts waiting for a
// slot (countSlots).
func (s *Service) CountsInFlight() (flights, waiters, waitingForSlot int) {
	s.totals.mu.Lock()
	defer s.totals.mu.Unlock()
	for _, f := range s.totals.inFlight {
		waiters += f.waiters
	}
	return len(s.totals.inFlight), waiters, int(s.totals.slots.waiting.Load())
}
