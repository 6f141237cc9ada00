package live

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/viewer"
)

// stream is one subscription: a subscriber of a group, with the
// credential it re-checks and the events its group handed it and it has
// yet to send. Its transport calls next (and ready) until no event comes.
type stream struct {
	live       *Live
	g          *group
	credential string
	v          *viewer.Viewer
	// queue holds what the group handed the stream (Options.Buffer at
	// most); the group closes it when it ends the stream, ended saying why
	// (set before the close).
	queue chan streamEvent
	ended error
	// queued is the bytes of the renderings in queue (see group.hand).
	queued atomic.Int64
	// wake tells the stream's goroutine, waiting on its queue, that
	// something else is due: its context ended, or a timer set a bit of
	// due. Two channels to wait on, however many timers: a subscriber
	// wakes for every event, and each channel a wait selects on costs.
	wake chan struct{}
	due  atomic.Uint32
	// check fires when the credential is next to be checked: the re-check
	// interval after the last check, or when the token expires if sooner.
	check *time.Timer
	// idle fires the transport's keep-alive; watching stops ctx's wake-up.
	idle     *time.Timer
	watching func() bool
	// pending are the events a resumed subscription replays before its
	// live ones (resume.go); floor is the last version the log gave: live
	// events at or below it were replayed already.
	pending []events.Notification
	floor   int64
}

// What a stream's timers make due.
const (
	dueCheck uint32 = 1 << iota
	dueIdle
)

// signal wakes the stream's goroutine, if it is not about to wake.
func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// open starts a subscription of oc for the viewer of ctx, who authenticated
// with credential. Errors, presented: unauthenticated, rate_limited (the
// token's subscriptions are at their cap, or the workspace's operations),
// disconnected (access lost as it opened), unavailable (the server shutting
// down), and the operation's own (the filter).
func (l *Live) open(ctx context.Context, exec graphql.GraphExecutor, oc *graphql.OperationContext, credential string) (*stream, gqlerror.List) {
	v := viewer.FromContext(ctx)
	if v == nil {
		return nil, gqlerror.List{l.present(ctx, apperr.New(apperr.Unauthenticated, "authentication required"))}
	}
	if err := l.acquire(v.Credential()); err != nil {
		return nil, gqlerror.List{l.present(ctx, err)}
	}
	g, errs := l.join(ctx, exec, oc, v)
	if errs != nil {
		l.release(v.Credential())
		return nil, errs
	}
	s := &stream{live: l, g: g, credential: credential, v: v, queue: make(chan streamEvent, l.opts.Buffer), wake: make(chan struct{}, 1)}
	// Listening before the credential is checked again: an access change
	// committed after that check is heard, and one committed before it is
	// seen by it. Checked once the viewer authenticated alone, a removal
	// committing in between went unnoticed.
	if !g.listen(s) {
		s.close()
		return nil, gqlerror.List{l.present(ctx, errClosing)}
	}
	v, err := l.reauthenticate(ctx, credential, v, true)
	if err != nil {
		s.close()
		return nil, gqlerror.List{l.present(ctx, err)}
	}
	s.setViewer(v)
	after, resumes, err := g.resumeVersion(oc)
	if err == nil && resumes {
		err = s.replayFrom(ctx, after)
	}
	if err != nil {
		s.close()
		return nil, gqlerror.List{l.present(ctx, err)}
	}
	return s, nil
}

// setViewer keeps v, the credential as last checked, and schedules the
// next check: the re-check interval from now, or the token's expiry if
// that comes first. A credential that passed its check although its
// expiry has passed (a clock that disagrees) is checked again a second
// later, not at once: never a loop of checks.
func (s *stream) setViewer(v *viewer.Viewer) {
	s.v = v
	d := s.live.opts.Recheck
	if !v.ExpiresAt.IsZero() {
		until := time.Until(v.ExpiresAt)
		if until < 0 {
			until = expiredRecheck
		}
		d = min(d, until+10*time.Millisecond)
	}
	if s.check == nil {
		s.check = time.AfterFunc(d, func() { s.due.Or(dueCheck); s.signal() })
		return
	}
	s.check.Reset(d)
}

// expiredRecheck is how soon a credential whose expiry has passed, but
// that passed its check, is checked again.
const expiredRecheck = time.Second

// close ends the subscription and frees its slot. What its group handed
// it and it did not send is given back.
func (s *stream) close() {
	if s.check != nil {
		s.check.Stop()
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.watching != nil {
		s.watching()
	}
	s.g.unlisten(s)
	// Unlistened (or dropped, its queue closed): nothing more is handed.
	for drained := false; !drained; {
		select {
		case se, ok := <-s.queue:
			drained = !ok
			se.r.done()
		default:
			drained = true
		}
	}
	s.live.release(s.v.Credential())
	s.live.leave(s.g)
}

// errIdle is returned by next when its idle callback failed: the stream's
// connection is gone.
var errIdle = errors.New("live: stream broken")

// next returns the next event to send, rendered; nil with a nil error when
// ctx ended (the subscriber left). ctx is the same at every call. It calls
// onIdle every idle (a transport's keep-alive; 0 for none), returning
// errIdle when that fails. Other errors end the subscription and are for
// its subscriber: disconnected (access lost), unavailable (too slow, or the
// server is shutting down), or what reading an event failed with.
func (s *stream) next(ctx context.Context, idle time.Duration, onIdle func() error) (*rendered, error) {
	if s.watching == nil {
		s.watching = context.AfterFunc(ctx, s.signal)
		if idle > 0 {
			s.idle = time.AfterFunc(idle, func() { s.due.Or(dueIdle); s.signal() })
		}
	}
	for {
		if len(s.pending) > 0 {
			if r, err := s.replayed(ctx); r != nil || err != nil {
				return r, err
			}
		}
		select {
		case se, ok := <-s.queue:
			r, err := s.handle(ctx, se, ok)
			if r != nil || err != nil {
				return r, err
			}
		case <-s.wake:
			if ctx.Err() != nil {
				return nil, nil
			}
			due := s.due.Swap(0)
			if due&dueIdle != 0 {
				if err := onIdle(); err != nil {
					return nil, errIdle
				}
				s.idle.Reset(idle)
			}
			if due&dueCheck != 0 {
				if err := s.recheck(ctx); err != nil {
					return nil, err
				}
			}
		}
	}
}

// ready returns the next event to send if one is queued already, without
// waiting: a transport sends every event that is ready with one write.
// ok is false when nothing is ready; errors are next's.
func (s *stream) ready(ctx context.Context) (r *rendered, ok bool, err error) {
	if len(s.pending) > 0 {
		r, err := s.replayed(ctx)
		return r, r != nil, err
	}
	for len(s.queue) > 0 {
		se, open := <-s.queue
		if r, err := s.handle(ctx, se, open); r != nil || err != nil {
			return r, r != nil, err
		}
		if !open {
			break
		}
	}
	return nil, false, nil
}

// handle turns se, handed by the group (open false when the group ended
// the stream), into what to send: nil when it is not delivered to this
// subscriber.
func (s *stream) handle(ctx context.Context, se streamEvent, open bool) (*rendered, error) {
	if se.r != nil {
		s.queued.Add(-se.r.size())
	}
	switch {
	case !open:
		return nil, s.ended
	case se.err != nil:
		return nil, se.err
	case se.r != nil && se.e.Version <= s.floor:
		se.r.done()
		return nil, nil // replayed from the log already
	case se.r != nil:
		if err := s.checkAccess(ctx, se.r); err != nil {
			se.r.done()
			return nil, err
		}
		return se.r, nil
	}
	// A REFETCH or an access change: after a REFETCH an access change may
	// have been missed too. Every subscription of a token hears it: the
	// token is looked up once for all of them.
	if err := s.sharedCheck(ctx, checkKey{credential: s.credential, workspace: s.v.WorkspaceID, seq: se.e.Seq}); err != nil {
		return nil, err
	}
	e := se.e
	if e.Kind == core.AccessChanged && !e.Refetch {
		return nil, nil
	}
	version := e.Version
	if version == 0 {
		version = s.v.WorkspaceVersion
	}
	r, err := s.g.deliver(ctx, e, version)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, nil // the subscriber left while its event was rendered
	case err != nil:
		return nil, err
	case r.payload == nil:
		return nil, nil
	}
	return r, nil
}

// sharedCheck checks the subscription's credential again, once for every
// subscription of its token that asks under key (the checks cache), and
// keeps the viewer it answers.
func (s *stream) sharedCheck(ctx context.Context, key checkKey) error {
	v, err := s.live.checks.get(ctx, key, func() (*viewer.Viewer, int64, error) {
		// Not cancelled with this subscriber: the token's other
		// subscriptions take its answer, and a lookup cut short would keep
		// the previous viewer for all of them. Bounded as a request is.
		cctx := context.WithoutCancel(ctx)
		if t := s.live.opts.RequestTimeout; t > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(cctx, t)
			defer cancel()
		}
		v, err := s.live.reauthenticate(cctx, s.credential, s.v, true)
		return v, 256 + int64(len(s.credential)), err
	})
	if err != nil {
		return err
	}
	s.setViewer(v)
	return nil
}

// checkAccess checks the subscription's credential again before it is
// sent r, if r shows records read after a write that may have taken
// someone's access away (r.access, core.AccessVersion) committed later
// than the credential was last checked: an event committed before a
// member's removal, but rendered from records read after it, must not
// show that member what was written since. One lookup per token and such
// write, however many subscriptions the token holds (the checks cache).
// Errors: disconnected and the like (access lost), unavailable (the check
// could not be made).
func (s *stream) checkAccess(ctx context.Context, r *rendered) error {
	if r.access <= s.v.WorkspaceVersion {
		return nil
	}
	if err := s.sharedCheck(ctx, checkKey{credential: s.credential, workspace: s.v.WorkspaceID, access: r.access}); err != nil {
		return err
	}
	return nil
}

// recheck re-authenticates the subscription's credential.
func (s *stream) recheck(ctx context.Context) error {
	v, err := s.live.reauthenticate(ctx, s.credential, s.v, false)
	if err != nil {
		return err
	}
	s.setViewer(v)
	return nil
}
