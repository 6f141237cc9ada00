package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
)

// Classify is the storage classifier of apperr.From (Open registers it): it
// gives the errors of ent and of the database drivers their codes, and
// returns nil for any other error. A record not found is not_found, a
// broken constraint (a duplicate) conflict, and a value ent's schema refuses
// validation_failed naming the field; a fault a retry can overcome (see
// storageFault) is unavailable. The cause is kept for the log.
func Classify(err error) *apperr.Error {
	var nf *ent.NotFoundError
	if errors.As(err, &nf) {
		return &apperr.Error{Code: apperr.NotFound, Message: "not found", Err: err}
	}
	var ce *ent.ConstraintError
	if errors.As(err, &ce) {
		return &apperr.Error{Code: apperr.Conflict, Message: "the change conflicts with existing data", Err: err}
	}
	var ve *ent.ValidationError
	if errors.As(err, &ve) {
		return &apperr.Error{Code: apperr.ValidationFailed, Message: ve.Name + ": invalid value",
			Fields: []apperr.FieldError{{Field: ve.Name, Message: "invalid value"}}, Err: err}
	}
	// A context's end is apperr's own to answer; a deadline would
	// otherwise read as a lost connection (it is a net.Error).
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	if msg := storageFault(err); msg != "" {
		return &apperr.Error{Code: apperr.Unavailable, Message: msg, Err: err}
	}
	return nil
}

// Messages of the storage faults answered unavailable. They say what a
// client can do (retry); the cause is logged, never shown.
const (
	msgDatabaseDown   = "the database is unavailable; retry shortly"
	msgDatabaseSlow   = "the database did not answer in time; retry shortly"
	msgLocked         = "the data is locked by another operation; retry shortly"
	msgConcurrent     = "the change collided with a concurrent one; retry it"
	msgNoConnections  = "the database has no free connections; retry shortly"
	msgDatabaseClosed = "the database is shutting down; retry shortly"
	msgReadOnly       = "the database is read-only while it fails over; retry shortly"
)

// storageFault returns the client message for err when err means that the
// database could not serve the request now but may a moment later, and ""
// otherwise. Such faults are answered unavailable (503 with Retry-After),
// never internal:
//
//   - the connection is gone or cannot be made (ConnectionLost);
//   - a statement was cancelled or ran past statement_timeout (57014);
//   - a lock wait ran past lock_timeout (55P03), or SQLite stayed busy or
//     locked past its busy timeout (SQLITE_BUSY, SQLITE_LOCKED), or was
//     interrupted (SQLITE_INTERRUPT, a cancelled context);
//   - a serialization failure or deadlock (40001, 40P01): retrying succeeds;
//   - the server has no free connection slot (53300);
//   - the pool was closed (the process is shutting down).
//
// ent wraps driver errors, so every test goes through errors.As / errors.Is.
func storageFault(err error) string {
	if ConnectionLost(err) {
		return msgDatabaseDown
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57014": // query_canceled: statement_timeout or a cancel request
			return msgDatabaseSlow
		case "55P03": // lock_not_available: lock_timeout or NOWAIT
			return msgLocked
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return msgConcurrent
		case "53300": // too_many_connections
			return msgNoConnections
		case "25006": // read_only_sql_transaction: a write on a standby
			return msgReadOnly
		}
		return ""
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		// Extended result codes (SQLITE_BUSY_SNAPSHOT, …) keep the primary
		// code in their low byte.
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return msgLocked
		case sqlite3.SQLITE_INTERRUPT:
			return msgDatabaseSlow
		}
		return ""
	}
	// database/sql's errDBClosed is unexported: "sql: database is closed".
	if strings.Contains(err.Error(), "sql: database is closed") {
		return msgDatabaseClosed
	}
	return ""
}

// noServerFits reports whether lib/pq found no server the URL's
// target_session_attrs accepts: during a failover every host may be down
// or a standby for a moment. Its errors are not typed.
func noServerFits(err error) bool {
	msg := err.Error()
	for _, s := range []string{"could not connect to any of the hosts", "server is in hot standby mode",
		"session is read-only", "server is not in hot standby mode", "session is not read-only"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ConnectionLost reports whether err means that the connection to the
// database broke or could not be made: the server is down, restarting or
// refusing connections, the backend was terminated (pg_terminate_backend, a
// failover), or the network between them failed. A fresh connection may
// succeed where the failed one did not, so a caller may retry a statement
// that is safe to repeat.
//
// It covers driver.ErrBadConn (which lib/pq reports for FATAL server errors
// and for an EOF mid-conversation) and sql.ErrConnDone; any net.Error
// (*net.OpError from dial, read or write, timeouts); io.EOF and
// io.ErrUnexpectedEOF (a connection closed during the startup exchange);
// ECONNREFUSED, ECONNRESET, ECONNABORTED, EPIPE, ETIMEDOUT, EHOSTUNREACH and
// ENETUNREACH; and PostgreSQL's SQLSTATE class 08 (connection exception),
// 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now,
// 57P05 idle_session_timeout and 25P03 idle_in_transaction_session_timeout.
func ConnectionLost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true
		}
	}
	// A context's deadline is a net.Error too, but it is the request's end,
	// not the connection's: counting it as lost would drop every idle
	// connection whenever a request runs out of time.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if noServerFits(err) {
		return true
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "57P05", "25P03":
			return true
		}
		return strings.HasPrefix(string(pe.Code), "08")
	}
	return false
}
