package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
)

// TryWrite runs fn in a transaction that gives up, rather than wait, when a
// lock it needs stays held for longer than wait: on PostgreSQL the
// transaction's lock_timeout is wait (a row lock held by a session idle in
// its transaction fails it with lock_not_available, 55P03); on SQLite the
// connection's busy timeout is wait while the write lock is taken
// (SQLITE_BUSY). It is for bookkeeping writes that may be skipped and done
// on a later request, which must not hold up the request behind a long
// transaction. Statements fn sends through tx are counted like ent's. fn's
// error, or the commit's, is returned; the transaction is then rolled back.
//
// Take locks in the order the other transactions of procsvc do (the
// workspace row first) so that TryWrite cannot deadlock with them.
func (db *DB) TryWrite(ctx context.Context, wait time.Duration, fn func(ctx context.Context, tx dialect.Tx) error) error {
	ms := max(wait.Milliseconds(), 1)
	var (
		tx  *sql.Tx
		err error
	)
	if db.Dialect == dialect.Postgres {
		if tx, err = db.SQL.BeginTx(ctx, nil); err != nil {
			return db.counter.check(err)
		}
		if _, err = tx.ExecContext(ctx, "SELECT set_config('lock_timeout', $1, true)", strconv.FormatInt(ms, 10)); err != nil {
			_ = tx.Rollback()
			return db.counter.check(err)
		}
	} else {
		conn, err := db.SQL.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		restore, err := sqliteBusyTimeout(ctx, conn, ms)
		if err != nil {
			return err
		}
		defer restore()
		// The DSN's _txlock=immediate makes this BEGIN IMMEDIATE: the write
		// lock is taken (or waited for) here.
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
	}
	etx := db.counter.newTx(&entsql.Tx{Conn: entsql.Conn{ExecQuerier: tx}, Tx: tx})
	if err := fn(ctx, etx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return etx.Commit()
}

// sqliteBusyTimeout sets conn's busy timeout to ms and returns what restores
// the previous one. A connection whose timeout cannot be restored is
// discarded rather than returned to the pool.
func sqliteBusyTimeout(ctx context.Context, conn *sql.Conn, ms int64) (restore func(), err error) {
	var prev int64
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&prev); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", ms)); err != nil {
		return nil, err
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", prev)); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}, nil
}
