package database_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/lib/pq"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/middleware"
)

// classifyStorage registers database.Classify, as database.Open does, for
// tests that make storage errors without opening a database.
func classifyStorage(t *testing.T) {
	t.Helper()
	apperr.SetStorageClassifier(database.Classify)
}

// TestEntErrors: ent's errors get their codes through apperr.From, however
// they are wrapped, with the cause kept for the log.
func TestEntErrors(t *testing.T) {
	classifyStorage(t)
	for _, tc := range []struct {
		name  string
		err   error
		code  apperr.Code
		field string
	}{
		{"NotFound", &ent.NotFoundError{}, apperr.NotFound, ""},
		{"Constraint", &ent.ConstraintError{}, apperr.Conflict, ""},
		{"Validation", &ent.ValidationError{Name: "name"}, apperr.ValidationFailed, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ae := apperr.From(fmt.Errorf("core: %w", tc.err))
			if ae.Code != tc.code || ae.Err == nil {
				t.Fatalf("From(%v) = %s (cause %v); want %s with the cause", tc.err, ae.Code, ae.Err, tc.code)
			}
			if tc.field != "" && (len(ae.Fields) != 1 || ae.Fields[0].Field != tc.field) {
				t.Fatalf("fields %v; want %s", ae.Fields, tc.field)
			}
		})
	}
}

// wrapped wraps err the way ent and database/sql callers do.
func wrapped(err error) error {
	return fmt.Errorf("ent: %w", fmt.Errorf("sql/sqlgraph: %w", err))
}

// TestStorageFaultsAreUnavailable: every failure a retry can overcome (the
// database down, restarting or unreachable, a broken connection, a statement
// or lock timeout, a serialization failure) is answered 503 unavailable,
// never 500 internal, however deeply it is wrapped, with the cause kept for
// the log and out of the message. Real-database versions of these are in
// faults_test.go and internal/server/outage_test.go.
func TestStorageFaultsAreUnavailable(t *testing.T) {
	classifyStorage(t)
	dialRefused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	readReset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	faults := map[string]error{
		"driver.ErrBadConn":               driver.ErrBadConn,
		"sql.ErrConnDone":                 sql.ErrConnDone,
		"database closed":                 errors.New("sql: database is closed"),
		"dial refused":                    dialRefused,
		"read reset":                      readReset,
		"bare ECONNREFUSED":               syscall.ECONNREFUSED,
		"bare ECONNRESET":                 syscall.ECONNRESET,
		"broken pipe":                     syscall.EPIPE,
		"unexpected EOF":                  io.ErrUnexpectedEOF,
		"EOF during startup":              io.EOF,
		"network timeout":                 os.ErrDeadlineExceeded,
		"08006 connection_failure":        &pq.Error{Code: "08006"},
		"08001 cannot establish":          &pq.Error{Code: "08001"},
		"08P01 protocol_violation":        &pq.Error{Code: "08P01"},
		"57P01 admin_shutdown":            &pq.Error{Code: "57P01", Severity: "FATAL"},
		"57P02 crash_shutdown":            &pq.Error{Code: "57P02", Severity: "FATAL"},
		"57P03 cannot_connect_now":        &pq.Error{Code: "57P03", Severity: "FATAL"},
		"57014 query_canceled":            &pq.Error{Code: "57014"},
		"55P03 lock_not_available":        &pq.Error{Code: "55P03"},
		"40001 serialization_failure":     &pq.Error{Code: "40001"},
		"40P01 deadlock_detected":         &pq.Error{Code: "40P01"},
		"53300 too_many_connections":      &pq.Error{Code: "53300", Severity: "FATAL"},
		"25P03 idle_in_transaction_ended": &pq.Error{Code: "25P03", Severity: "FATAL"},
	}
	for name, err := range faults {
		for _, form := range []struct {
			name string
			err  error
		}{{"bare", err}, {"wrapped", wrapped(err)}} {
			t.Run(name+"/"+form.name, func(t *testing.T) {
				ae := apperr.From(form.err)
				if ae.Code != apperr.Unavailable || middleware.HTTPStatus(ae.Code) != http.StatusServiceUnavailable {
					t.Fatalf("From(%v) = %s, want unavailable (503)", form.err, ae.Code)
				}
				if !errors.Is(ae, err) {
					t.Fatalf("the cause is not kept: %v", ae.Err)
				}
				if ae.Message == "" || ae.Message == err.Error() {
					t.Fatalf("message %q shows the cause", ae.Message)
				}
			})
		}
	}
}

// TestConnectionLost separates broken connections, worth a retry on a fresh
// one, from the other faults, which a new connection does not cure.
func TestConnectionLost(t *testing.T) {
	lost := []error{
		driver.ErrBadConn, wrapped(driver.ErrBadConn), io.ErrUnexpectedEOF,
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		&pq.Error{Code: "57P01"}, wrapped(&pq.Error{Code: "08006"}),
	}
	for _, err := range lost {
		if !database.ConnectionLost(err) {
			t.Errorf("ConnectionLost(%v) = false", err)
		}
	}
	kept := []error{
		nil, errors.New("boom"), context.Canceled, context.DeadlineExceeded, wrapped(context.DeadlineExceeded),
		&pq.Error{Code: "57014"}, &pq.Error{Code: "55P03"}, &pq.Error{Code: "23505"}, &pq.Error{Code: ""},
	}
	for _, err := range kept {
		if database.ConnectionLost(err) {
			t.Errorf("ConnectionLost(%v) = true", err)
		}
	}
}

// TestOtherErrorsStayInternal: the classification does not swallow real
// bugs: other SQLSTATEs and plain errors are still internal.
func TestOtherErrorsStayInternal(t *testing.T) {
	classifyStorage(t)
	for _, err := range []error{
		errors.New("boom"),
		&pq.Error{Code: "42P01"}, // undefined_table
		&pq.Error{Code: "23505"}, // unique_violation outside ent
		&pq.Error{Code: "22P02"}, // invalid_text_representation
		&pq.Error{Code: ""},
		wrapped(errors.New("sql: Scan error on column index 0")),
	} {
		if c := apperr.CodeOf(err); c != apperr.Internal {
			t.Errorf("CodeOf(%v) = %s, want internal", err, c)
		}
	}
	ae := &apperr.Error{Code: apperr.Conflict, Message: "x", Err: driver.ErrBadConn}
	if apperr.From(ae) != ae {
		t.Error("an *Error must keep its own code whatever its cause")
	}
}

// TestRequestDeadlineIsNotAnOutage: a request that ran out of time, even
// through a driver that wraps the deadline, is told so, not that the
// database is unavailable (a deadline is a net.Error too).
func TestRequestDeadlineIsNotAnOutage(t *testing.T) {
	classifyStorage(t)
	for _, err := range []error{context.DeadlineExceeded, wrapped(context.DeadlineExceeded), fmt.Errorf("core: %w", wrapped(context.DeadlineExceeded))} {
		ae := apperr.From(err)
		if ae.Code != apperr.Unavailable || ae.Message != "the request could not be completed in time" {
			t.Errorf("From(%v) = %s %q", err, ae.Code, ae.Message)
		}
	}
}
