package database

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/lib/pq"
)

// conn is a lib/pq connection of a connector's pool. It is not reused once
// it is known to be on the wrong server: a read-only one (SQLSTATE 25006)
// for a pool that writes, or one the pool has moved away from (an older
// generation).
type conn struct {
	driver.Conn
	owner      *connector
	net        *trackedConn // nil when not dialled over TCP
	generation uint64
	readOnly   atomic.Bool // a statement was refused as on a read-only server
}

// The interfaces database/sql looks for, all of which lib/pq's connection
// has: conn must keep them, or database/sql would quietly fall back to
// slower paths (or lose context cancellation).
var (
	_ driver.ConnBeginTx          = (*conn)(nil)
	_ driver.ConnPrepareContext   = (*conn)(nil)
	_ driver.QueryerContext       = (*conn)(nil)
	_ driver.ExecerContext        = (*conn)(nil)
	_ driver.Pinger               = (*conn)(nil)
	_ driver.SessionResetter      = (*conn)(nil)
	_ driver.Validator            = (*conn)(nil)
	_ driver.NamedValueChecker    = (*conn)(nil)
	_ driver.Conn                 = (*conn)(nil)
	_ interface{ IsValid() bool } = (*conn)(nil)
)

// server is the address of the connection's server, "" when unknown.
func (cn *conn) server() string {
	if cn.net == nil {
		return ""
	}
	return cn.net.server
}

// seen inspects a statement's error: a read-only server's refusal marks the
// connection for discarding.
func (cn *conn) seen(err error) error {
	if err != nil && isReadOnlyRefusal(err) {
		cn.readOnly.Store(true)
	}
	return err
}

// isReadOnlyRefusal reports whether err is PostgreSQL's
// read_only_sql_transaction (25006): "cannot execute … in a read-only
// transaction", which a write gets on a standby.
func isReadOnlyRefusal(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "25006"
}

func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := cn.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	return tx, cn.seen(err)
}

func (cn *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := cn.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, cn.seen(err)
	}
	return &stmt{Stmt: st, cn: cn}, nil
}

// stmt is a statement prepared on a conn: its runs are checked like the
// conn's own statements.
type stmt struct {
	driver.Stmt
	cn *conn
}

func (st *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := st.cn.pinned(ctx); err != nil {
		return nil, err
	}
	rows, err := st.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return rows, st.cn.seen(err)
}

func (st *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := st.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, st.cn.seen(err)
}

func (cn *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := cn.pinned(ctx); err != nil {
		return nil, err
	}
	rows, err := cn.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return rows, cn.seen(err)
}

func (cn *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := cn.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return res, cn.seen(err)
}

func (cn *conn) Ping(ctx context.Context) error {
	return cn.seen(cn.Conn.(driver.Pinger).Ping(ctx))
}

func (cn *conn) ResetSession(ctx context.Context) error {
	if !cn.IsValid() {
		return driver.ErrBadConn
	}
	return cn.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid implements driver.Validator: database/sql asks before it puts the
// connection back in the pool and before it reuses it.
func (cn *conn) IsValid() bool {
	if cn.readOnly.Load() || cn.generation != cn.owner.generation.Load() {
		return false
	}
	if cn.net != nil && cn.net.aborted.Load() {
		return false
	}
	return cn.Conn.(driver.Validator).IsValid()
}

func (cn *conn) CheckNamedValue(nv *driver.NamedValue) error {
	return cn.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// pinned refuses a read pinned to an earlier generation of the pool (see
// readsAt): its first statement read a server this connection is not on.
func (cn *conn) pinned(ctx context.Context) error {
	if pin, ok := ctx.Value(readPinKey{}).(*readPin); ok && pin.owner == cn.owner && pin.generation != cn.generation {
		return errGenerationMoved
	}
	return nil
}
