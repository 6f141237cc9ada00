package core

import (
	"fmt"
	"time"

	"entgo.io/ent/dialect"

	"github.com/procsvc/procsvc/ent"
)

// Service is the business layer over one ent client.
type Service struct {
	client    *ent.Client
	generator Generator
	now       func() time.Time
	totals    *totals
	announcer Announcer
	// statements announces from inside the statement that ends a field
	// update: set, from the announcer, only under SharedFieldUpdates.
	statements StatementAnnouncer
	locks      LockPolicy
	// writes are the write transactions running (finish.go).
	writes openWrites
	// privateWebhooks: webhook URLs may name private hosts
	// (WithPrivateWebhookAddresses).
	privateWebhooks bool
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces the clock, for tests.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// LockPolicy is how the writes of one workspace exclude each other.
type LockPolicy uint8

const (
	// ExclusiveWrites: every write holds its workspace exclusively until it
	// commits. The default, and the only policy SQLite can run: its BEGIN
	// IMMEDIATE serialises every write of the database anyway.
	ExclusiveWrites LockPolicy = iota
	// SharedFieldUpdates (PostgreSQL only): an update of one procedure's
	// fields that places it at no column's end holds the workspace shared,
	// so that updates of different procedures wait for each other only
	// for their last statement (see lockShared). It needs a
	// StatementAnnouncer, which announces from that statement.
	SharedFieldUpdates
)

// LockPolicyFor is the lock policy of a database of the ent dialect d: a
// deployment's wiring chooses it from its database, never from the
// announcer it happens to be given.
func LockPolicyFor(d string) LockPolicy {
	if d == dialect.Postgres {
		return SharedFieldUpdates
	}
	return ExclusiveWrites
}

// WithLockPolicy sets how writes lock their workspace (ExclusiveWrites
// unless set). SharedFieldUpdates requires WithAnnouncer's announcer to be
// a StatementAnnouncer: New panics otherwise, so that a wrapped announcer
// cannot quietly turn PostgreSQL's field updates exclusive.
func WithLockPolicy(p LockPolicy) Option { return func(s *Service) { s.locks = p } }

// New returns a Service over client. It panics when the options contradict
// each other (WithLockPolicy): a wiring mistake, found at start.
func New(client *ent.Client, opts ...Option) *Service {
	s := &Service{client: client, totals: newTotals(), now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }}
	for _, o := range opts {
		o(s)
	}
	if s.locks == SharedFieldUpdates {
		sa, ok := s.announcer.(StatementAnnouncer)
		if !ok {
			panic(fmt.Sprintf("core: SharedFieldUpdates needs a StatementAnnouncer, got announcer %T", s.announcer))
		}
		s.statements = sa
	}
	return s
}
