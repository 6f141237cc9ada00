package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/lib/pq"

	"github.com/procsvc/procsvc/internal/database"
)

// The listener's reconnection backoff: the first retry soon, since events
// are missed while it is down, then doubling up to the cap.
const (
	minReconnect = 200 * time.Millisecond
	maxReconnect = 10 * time.Second
)

// Listener LISTENs on Channel on a connection of its own and publishes
// every change notified to a Hub. lib/pq re-establishes the connection when
// it is lost, with backoff; once it is back the hub's subscribers are told
// to refetch, since changes committed meanwhile were not heard.
type Listener struct {
	pq     *pq.Listener
	dialer *database.Dialer
	hub    *Hub
	log    *slog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// ListenOptions tune how the listener finds that its server went silent.
type ListenOptions struct {
	// ProbeInterval is how often the session is pinged (0:
	// database.DefaultProbeInterval; negative: never). A ping without an
	// answer within ProbeTimeout (0: database.DefaultProbeTimeout) aborts
	// the connection: lib/pq then reconnects, to the URL's new primary
	// after a failover, and subscribers are told to refetch.
	ProbeInterval, ProbeTimeout time.Duration
	// ConnectTimeout is connect_timeout for a URL without one (0:
	// database.DefaultConnectTimeout).
	ConnectTimeout time.Duration
}

// Listen connects to the PostgreSQL server at dsn (the URL the server's
// database uses: the session timeouts of its pool are lifted on this
// connection, which stays idle and must not be ended for it) and returns
// once LISTEN is in place, so that every change committed after Listen
// returns reaches h. ctx bounds only that wait. log may be nil.
// Errors: an invalid URL, the first connection attempt's or LISTEN's
// error, or ctx's.
func Listen(ctx context.Context, dsn string, h *Hub, log *slog.Logger, opts ...ListenOptions) (*Listener, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var o ListenOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	ldsn, err := listenerDSN(dsn, o.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	firstFailure := make(chan error, 1)
	onEvent := func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventConnectionAttemptFailed:
			select {
			case firstFailure <- err:
			default:
			}
			log.Warn("events: listener cannot connect", "err", err)
		case pq.ListenerEventDisconnected:
			log.Warn("events: listener disconnected; reconnecting", "err", err)
		case pq.ListenerEventReconnected:
			log.Info("events: listener reconnected; subscribers will refetch")
		}
	}
	dialer := database.NewDialer()
	l := &Listener{
		pq:     pq.NewDialListener(dialer, ldsn, minReconnect, maxReconnect, onEvent),
		dialer: dialer,
		hub:    h,
		log:    log,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go l.run()
	if o.ProbeInterval >= 0 {
		go l.watch(cmp.Or(o.ProbeInterval, database.DefaultProbeInterval), cmp.Or(o.ProbeTimeout, database.DefaultProbeTimeout))
	}
	listened := make(chan error, 1)
	go func() { listened <- l.pq.Listen(Channel) }()
	select {
	case err = <-listened:
		if err == nil {
			return l, nil
		}
		err = fmt.Errorf("events: LISTEN %s: %w", Channel, err)
	case err = <-firstFailure:
		err = fmt.Errorf("events: listener cannot connect: %w", err)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = l.Close()
	return nil, err
}

// run publishes notifications until Close. lib/pq sends a nil notification
// on its channel right after a reconnection, in order with the others: the
// Refetch it causes follows every event heard on the lost connection.
func (l *Listener) run() {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			// lib/pq closes Notify once its goroutine notices the Close
			// (after a reconnection backoff at worst); keep it unblocked.
			go func() {
				for range l.pq.Notify {
				}
			}()
			return
		case n, ok := <-l.pq.Notify:
			if !ok {
				return
			}
			l.handle(n)
		}
	}
}

func (l *Listener) handle(n *pq.Notification) {
	if n == nil {
		l.hub.Refetch()
		return
	}
	if n.Channel != Channel {
		return
	}
	e, err := decode(n.Extra)
	if err != nil {
		l.log.Warn("events: dropped a malformed notification", "err", err, "bytes", len(n.Extra))
		return
	}
	l.hub.Publish(e)
}

// watch pings the session every interval until Close, and aborts its
// connection when a ping gets no answer within timeout: a LISTEN session
// on a server that went silent (host down, partition) would otherwise wait
// for notifications forever, on a primary that may have been replaced.
func (l *Listener) watch(interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		pinged := make(chan error, 1)
		go func() { pinged <- l.pq.Ping() }()
		select {
		case <-pinged:
		case <-time.After(timeout):
			n := l.dialer.AbortAll()
			l.log.Warn("events: the listener's server did not answer a ping; reconnecting", "timeout", timeout.String(), "aborted", n)
			<-pinged
		case <-l.stop:
			return
		}
	}
}

// Close stops the listener and closes its connection. Nothing is published
// after it returns. It may be called more than once.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		err = l.pq.Close()
		<-l.done
	})
	return err
}

// listenerDSN is dsn with the session timeouts set to 0: statement_timeout,
// lock_timeout and idle_in_transaction_session_timeout, which the server's
// pool may carry as URL parameters (internal/database), would otherwise be
// applied to this connection too. It names the session for operators
// unless the URL does. idle_session_timeout is left alone, as PostgreSQL 13
// does not know it: the server must not set it for procsvc's role.
func listenerDSN(dsn string, connectTimeout time.Duration) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("events: the listener needs a postgres:// URL")
	}
	q := u.Query()
	for _, k := range []string{"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"} {
		q.Set(k, "0")
	}
	if !q.Has("application_name") {
		q.Set("application_name", "procsvc-events")
	}
	u.RawQuery = q.Encode()
	return database.WithConnectTimeout(u.String(), cmp.Or(connectTimeout, database.DefaultConnectTimeout))
}
