// Package database opens procsvc's storage: embedded SQLite (the default, no
// cgo) or PostgreSQL through lib/pq, behind one ent client. It also reads
// the storage's errors: Classify (errors.go) gives ent's errors and the
// drivers' faults their apperr codes, and Open registers it with apperr.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/lib/pq"  // PostgreSQL driver
	_ "modernc.org/sqlite" // SQLite driver, pure Go

	"github.com/procsvc/procsvc/ent"
	_ "github.com/procsvc/procsvc/ent/runtime" // registers schema hooks and interceptors
	"github.com/procsvc/procsvc/internal/apperr"
)

// DefaultURL is the embedded database used when none is configured.
const DefaultURL = "sqlite://data/procsvc.db"

// Options tune the connection pool.
type Options struct {
	// MaxOpenConns caps the pool; 0 picks a default for the dialect.
	MaxOpenConns int
	// Prepare sends statements as prepared statements (cached per
	// connection, stmtCacheSize texts), reads and, once a text is
	// prepared, a transaction's statements too, so that the server plans
	// (PostgreSQL) or compiles (SQLite) each query shape once instead of on
	// every request. Not for PgBouncer in transaction mode.
	Prepare bool
	// LockTimeout, StatementTimeout and IdleInTransactionTimeout set
	// PostgreSQL's lock_timeout, statement_timeout and
	// idle_in_transaction_session_timeout on every connection of the pool
	// (sent as startup parameters), so that a request waiting on a lock held
	// by a stuck session, or running away, fails (answered unavailable)
	// instead of hanging, and a session of procsvc's left idle inside a
	// transaction is ended by the server. 0 leaves the server's setting; a
	// setting already present in the URL wins. Migrate runs without them.
	// SQLite ignores them: its busy timeout bounds lock waits.
	LockTimeout              time.Duration
	StatementTimeout         time.Duration
	IdleInTransactionTimeout time.Duration

	// ConnectTimeout is PostgreSQL's connect_timeout, set on a URL that has
	// none (0: DefaultConnectTimeout): how long one host of the URL may
	// take to accept a connection before the next is tried.
	ConnectTimeout time.Duration
	// ProbeInterval is how often each PostgreSQL pool's server is probed
	// (monitor.go); 0: DefaultProbeInterval; negative: never (then a
	// silent server holds requests until their deadline, and Health always
	// reports healthy). ProbeTimeout is how long it may take to answer (0:
	// DefaultProbeTimeout).
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// ReadURL, when set, names the PostgreSQL servers of the read pool:
	// standbys that serve the reads a request allows (ReadsAt). Its
	// session timeouts and pool size are the primary's.
	ReadURL string
	// Log receives the probes' findings; nil discards them.
	Log *slog.Logger
}

// sessionParams returns the PostgreSQL settings of o, in milliseconds.
func (o Options) sessionParams() map[string]string {
	p := map[string]string{}
	for name, d := range map[string]time.Duration{
		"lock_timeout":                        o.LockTimeout,
		"statement_timeout":                   o.StatementTimeout,
		"idle_in_transaction_session_timeout": o.IdleInTransactionTimeout,
	} {
		if d <= 0 {
			continue
		}
		ms := d.Milliseconds()
		if ms == 0 {
			ms = 1 // 0 would disable it
		}
		p[name] = strconv.FormatInt(ms, 10)
	}
	return p
}

// DB is an open database: the ent client, its dialect and a statement counter.
type DB struct {
	Client  *ent.Client
	Dialect string
	SQL     *sql.DB
	counter *counter
	// migrateDSN, when set, is the PostgreSQL DSN without the session
	// timeouts of Options, for Migrate.
	migrateDSN string
}

// Statements returns how many SQL statements have been sent so far. Tests use
// it to prove that list pages cost a constant number of statements.
func (db *DB) Statements() int64 { return db.counter.n.Load() }

// SettlePreparer waits until the statements transactions have offered so
// far to be prepared (Options.Prepare) are prepared, on a connection of the
// pool, off any request's path. Tests that count what SQLite compiles call
// it first: otherwise a late preparation is counted as theirs.
func (db *DB) SettlePreparer(ctx context.Context) error {
	if db.counter.stmts == nil {
		return nil
	}
	return db.counter.stmts.settled(ctx)
}

// Close closes the client and the pool.
func (db *DB) Close() error {
	if db.counter.stmts != nil {
		db.counter.stmts.close()
	}
	db.counter.primary.close()
	db.counter.read.close()
	return db.Client.Close()
}

// pingAttempts bounds Ping's retries on broken connections. Each failed
// attempt discards the connection it used and every idle one, so the next
// attempt dials afresh: a third attempt only happens when a fresh connection
// broke too.
const pingAttempts = 3

// Ping reports whether a request would get an answer from the database now.
// It runs SELECT 1 through the pool, as requests do, so it waits for a free
// connection like them. A pooled connection the server dropped (backends
// terminated, a restart, a failover, a proxy that went away) does not fail
// it: database/sql's own Ping gives up on the first dead pooled connection,
// so after the server had terminated every backend it kept failing until it
// had drawn each dead connection once, while requests, retried on fresh
// connections, succeeded. Errors: what the last attempt got, or ctx's.
func (db *DB) Ping(ctx context.Context) error {
	var err error
	for range pingAttempts {
		var one int
		if err = db.SQL.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
			return nil
		}
		if ctx.Err() != nil || !ConnectionLost(err) {
			return err
		}
		db.counter.lost(err)
	}
	return err
}

// Open connects to rawURL: a postgres:// or postgresql:// URL selects
// PostgreSQL; sqlite://PATH, file:PATH or a bare path selects SQLite
// (sqlite://:memory: for an in-memory database). It registers Classify with
// apperr, so that the errors of the database read as their codes.
func Open(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	apperr.SetStorageClassifier(Classify)
	if rawURL == "" {
		rawURL = DefaultURL
	}
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	var (
		drv     *entsql.Driver
		sqlDB   *sql.DB
		name    string
		err     error
		maxOpen = opts.MaxOpenConns
		primary *pool
	)
	switch {
	case IsPostgres(rawURL):
		name = dialect.Postgres
		if maxOpen == 0 {
			maxOpen = 20
		}
		p, perr := openPool("primary", rawURL, opts, maxOpen, true)
		if perr != nil {
			return nil, perr
		}
		primary, sqlDB = p, p.sql
	default:
		name = dialect.SQLite
		dsn, memory, serr := sqliteDSN(rawURL)
		if serr != nil {
			return nil, serr
		}
		if sqlDB, err = sql.Open("sqlite", dsn); err != nil {
			return nil, err
		}
		if memory {
			// Each connection to :memory: is its own database.
			maxOpen = 1
		} else if maxOpen == 0 {
			maxOpen = 8
		}
		sqlDB.SetMaxOpenConns(maxOpen)
		sqlDB.SetMaxIdleConns(maxOpen)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("database: cannot reach %s database: %w", name, err)
	}
	drv = entsql.OpenDB(name, sqlDB)
	c := &counter{Driver: drv}
	db := &DB{Dialect: name, SQL: sqlDB, counter: c}
	if name == dialect.Postgres {
		c.primary = primary
		if opts.Prepare {
			c.stmts = newStmtCache(sqlDB)
		}
		if len(opts.sessionParams()) > 0 {
			if db.migrateDSN, err = postgresDSN(rawURL, nil, opts.connectTimeout()); err != nil {
				sqlDB.Close()
				return nil, err
			}
		}
		if opts.ReadURL != "" {
			if c.read, err = openReadPool(ctx, opts, maxOpen); err != nil {
				sqlDB.Close()
				return nil, err
			}
		}
		primary.startProbe()
		c.read.startProbe()
	} else if opts.ReadURL != "" {
		sqlDB.Close()
		return nil, errors.New("database: a read URL needs PostgreSQL (--database-read-url)")
	}
	if name == dialect.SQLite && opts.Prepare {
		// SQLite compiles a statement as PostgreSQL plans one: the
		// dashboard's nested read (a UNION ALL of 20 branches) took
		// 0.6 ms to prepare and 2.4 ms to run.
		c.stmts = newStmtCache(sqlDB)
	}
	db.Client = ent.NewClient(ent.Driver(c))
	return db, nil
}

// entSchemaMu serialises every use of ent's schema planner in this process.
// The table descriptions it plans from (ent/migrate.Tables) are package-level,
// and planning rewrites them: ent v0.14's Atlas.setupTables fills each table's
// column map and appends index back-references. Two migrations at once, of
// any two databases, crash the process with "concurrent map writes".
var entSchemaMu sync.Mutex

// Migrate brings the schema up to date: ent's automatic migration for the
// embedded SQLite database, the versioned migrations (ApplyMigrations) for
// PostgreSQL. It is safe to call concurrently, on any number of databases.
func (db *DB) Migrate(ctx context.Context) error {
	if db.Dialect == dialect.Postgres {
		if db.migrateDSN != "" {
			// Waiting for another replica's migration lock, or building an
			// index on a large table, may rightly take longer than any
			// request: migrate over connections without the timeouts.
			sqlDB, err := sql.Open("postgres", db.migrateDSN)
			if err != nil {
				return err
			}
			defer sqlDB.Close()
			sqlDB.SetMaxOpenConns(2)
			_, err = (&DB{Dialect: db.Dialect, SQL: sqlDB}).ApplyMigrations(ctx)
			return err
		}
		_, err := db.ApplyMigrations(ctx)
		return err
	}
	entSchemaMu.Lock()
	defer entSchemaMu.Unlock()
	if err := db.Client.Schema.Create(ctx); err != nil {
		return fmt.Errorf("database: migrate: %w", err)
	}
	if err := db.sqliteCommentCounts(ctx); err != nil {
		return fmt.Errorf("database: migrate: comment counts: %w", err)
	}
	return nil
}

// Ready checks that the schema is current without changing it: SQLite is
// migrated in place; PostgreSQL must have every versioned migration applied.
// Errors: ErrSchemaBehind, or what the database said.
func (db *DB) Ready(ctx context.Context) error {
	if db.Dialect != dialect.Postgres {
		return db.Migrate(ctx)
	}
	pending, err := db.PendingMigrations(ctx)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("%w (pending: %s)", ErrSchemaBehind, strings.Join(pending, ", "))
	}
	return nil
}

// postgresDSN pins the session time zone to UTC so that every timestamp
// read back is UTC whatever the server's setting, and adds the session
// settings of params (lib/pq sends URL parameters it does not know as
// startup parameters, which the server applies like SET). Settings the URL
// already has are kept.
func postgresDSN(raw string, params map[string]string, connectTimeout time.Duration) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("database: invalid PostgreSQL URL: %w", redact(err))
	}
	q := u.Query()
	if q.Get("timezone") == "" {
		q.Set("timezone", "UTC")
	}
	if !q.Has("binary_parameters") {
		// lib/pq then sends a statement with arguments as one message
		// (parse, bind, execute) and waits once, instead of preparing it
		// and waiting, then executing it and waiting again: half the round
		// trips of every unprepared statement, which is every statement of
		// a write's transaction. []byte arguments go as binary, which is
		// what bytea (the only binary column) expects.
		q.Set("binary_parameters", "yes")
	}
	if !q.Has("disable_prepared_binary_result") {
		// Results of prepared statements as text: lib/pq would otherwise
		// take a uuid in binary, turn it into its text form, and hand that
		// to uuid.Scan to parse again, for every id of every row.
		q.Set("disable_prepared_binary_result", "yes")
	}
	if connectTimeout > 0 && !q.Has("connect_timeout") {
		// In whole seconds, as libpq reads it; at least 1 (0 waits forever).
		q.Set("connect_timeout", strconv.FormatInt(max(int64(connectTimeout/time.Second), 1), 10))
	}
	for k, v := range params {
		if !q.Has(k) {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// redact drops a URL (and any password in it) from a parse error.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sqliteDSN turns a sqlite URL or path into a modernc DSN with the pragmas
// procsvc relies on: foreign keys, WAL, a busy timeout and immediate write
// transactions (so that concurrent writers queue instead of failing), and
// _time_format=sqlite, without which times are written in a form that cannot
// be read back.
func sqliteDSN(raw string) (dsn string, memory bool, err error) {
	path, query := sqlitePath(raw)
	if path == "" {
		return "", false, errors.New("database: empty SQLite path")
	}
	memory = path == ":memory:"
	params := url.Values{}
	params.Add("_pragma", "foreign_keys(1)")
	if !hasBusyTimeout(query) {
		// modernc runs a URL's own busy_timeout pragma in no set order
		// with this one: add it only when the URL has none.
		params.Add("_pragma", "busy_timeout(10000)")
	}
	params.Set("_time_format", "sqlite")
	params.Set("_txlock", "immediate")
	if !memory {
		params.Add("_pragma", "journal_mode(WAL)")
		params.Add("_pragma", "synchronous(NORMAL)")
		// Only the default's directory is created (a first run's data/);
		// CheckURL has refused any other URL whose directory is missing,
		// the sign of a mistyped path.
		if dir := filepath.Dir(path); dir != "." && raw == DefaultURL {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", false, fmt.Errorf("database: create %s: %w", dir, err)
			}
		}
	}
	dsn = "file:" + path + "?" + params.Encode()
	if query != "" {
		dsn += "&" + query
	}
	return dsn, memory, nil
}

// sqlitePath splits a SQLite URL (sqlite://PATH, sqlite3://PATH,
// sqlite:PATH, file:PATH or a bare path) into its path and its query.
func sqlitePath(raw string) (path, query string) {
	path = raw
	for _, p := range []string{"sqlite://", "sqlite3://", "sqlite:", "file:"} {
		if strings.HasPrefix(path, p) {
			path = strings.TrimPrefix(path, p)
			break
		}
	}
	path, query, _ = strings.Cut(path, "?")
	return path, query
}

// hasBusyTimeout reports whether a SQLite URL's query sets the busy timeout.
func hasBusyTimeout(query string) bool {
	q, err := url.ParseQuery(query)
	if err != nil {
		return false
	}
	if q.Has("_busy_timeout") || q.Has("_timeout") {
		return true
	}
	for _, p := range q["_pragma"] {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout") {
			return true
		}
	}
	return false
}

// Statement is one SQL statement as sent, for tests that inspect plans.
type Statement struct {
	Query string
	Args  []any
}

// Record makes every later statement sent outside a transaction be passed
// to fn (nil stops). Tests use it to EXPLAIN what the service really runs.
func (db *DB) Record(fn func(Statement)) {
	if fn == nil {
		db.counter.record.Store(nil)
		return
	}
	db.counter.record.Store(&fn)
}

// counter counts statements sent through ent, including inside transactions.
type counter struct {
	dialect.Driver
	n      atomic.Int64
	record atomic.Pointer[func(Statement)]
	stmts  *stmtCache // nil unless Options.Prepare
	// primary is the primary's pool, read the standbys' (nil without
	// Options.ReadURL): both PostgreSQL only (an SQLite :memory: database
	// lives in its one connection, which lost must not give up).
	primary, read *pool
	// faults are those a test injected (Inject), nil otherwise.
	faults atomic.Pointer[Faults]
}

// lost is told of every failed statement. When err says a connection
// broke, the server has most likely dropped every connection opened before
// (a restart, a failover, backends terminated, a proxy gone): every
// connection of the primary's pool open now is retired, so that the next
// requests dial afresh instead of each drawing a dead connection first.
// database/sql retries only driver.ErrBadConn on another connection; a
// broken connection that reports a network error fails its request. A
// retired connection is refused as it is drawn (ResetSession answers
// ErrBadConn, and database/sql draws another, then dials) or returned.
//
// Not database/sql's SetMaxIdleConns(-1), which closed the idle ones at
// once: it closes the connections of a slice that shares its array with
// the pool's free list, so a connection put back meanwhile took a closing
// one's place and was closed while in use (a nil pointer panic in
// database/sql during failovers).
func (c *counter) lost(err error) {
	if c.primary == nil || !ConnectionLost(err) {
		return
	}
	c.primary.conn.retire()
}

func (c *counter) observe(query string, args any) {
	c.n.Add(1)
	if fn := c.record.Load(); fn != nil {
		a, _ := args.([]any)
		(*fn)(Statement{Query: query, Args: a})
	}
}

func (c *counter) Exec(ctx context.Context, query string, args, v any) error {
	c.observe(query, args)
	if err := c.statementFault(query); err != nil {
		return c.check(err)
	}
	return c.check(c.Driver.Exec(ctx, query, args, v))
}

func (c *counter) Query(ctx context.Context, query string, args, v any) error {
	c.observe(query, args)
	if err := c.statementFault(query); err != nil {
		return c.check(err)
	}
	if r := c.reading(ctx); r != nil {
		err := c.queryOn(ctx, r, query, args, v)
		if !errors.Is(err, errGenerationMoved) {
			return err
		}
		// The read pool moved after the request's first read: the
		// primary is never behind it.
	}
	if c.stmts != nil {
		if vr, ok := v.(*entsql.Rows); ok {
			if argv, ok := args.([]any); ok {
				return c.check(c.stmts.query(ctx, query, argv, vr))
			}
		}
	}
	return c.check(c.Driver.Query(ctx, query, args, v))
}

// queryOn runs a read on the read pool r.
func (c *counter) queryOn(ctx context.Context, r *pool, query string, args, v any) error {
	if r.stmts != nil {
		if vr, ok := v.(*entsql.Rows); ok {
			if argv, ok := args.([]any); ok {
				return r.stmts.query(ctx, query, argv, vr)
			}
		}
	}
	return r.drv.Query(ctx, query, args, v)
}

// check passes err on, after telling lost of it.
func (c *counter) check(err error) error {
	if err != nil {
		c.lost(err)
	}
	return err
}

func (c *counter) Tx(ctx context.Context) (dialect.Tx, error) {
	tx, err := c.Driver.Tx(ctx)
	if err != nil {
		return nil, c.check(err)
	}
	return c.newTx(tx), nil
}

func (c *counter) BeginTx(ctx context.Context, opts *entsql.TxOptions) (dialect.Tx, error) {
	tx, err := c.Driver.(interface {
		BeginTx(context.Context, *entsql.TxOptions) (dialect.Tx, error)
	}).BeginTx(ctx, opts)
	if err != nil {
		return nil, c.check(err)
	}
	return c.newTx(tx), nil
}

type countingTx struct {
	dialect.Tx
	c     *counter
	fault *txFault // nil unless a test injected a commit fault (Inject)
	// sqlTx is the transaction under ent's, whose statements run prepared
	// (Options.Prepare) as the pool's reads do: nil without it.
	sqlTx *sql.Tx
	// pending are the texts it ran unprepared, offered to the preparer
	// once it has committed (at most maxPendingPerTx, each once).
	pending []string
}

func (t *countingTx) Exec(ctx context.Context, query string, args, v any) error {
	t.c.n.Add(1)
	if err := t.statement(query); err != nil {
		return t.c.check(err)
	}
	if handled, err := t.prepared(ctx, query, args, v); handled {
		return t.c.check(err)
	}
	return t.c.check(t.Tx.Exec(ctx, query, args, v))
}

func (t *countingTx) Query(ctx context.Context, query string, args, v any) error {
	t.c.n.Add(1)
	if err := t.statement(query); err != nil {
		return t.c.check(err)
	}
	if handled, err := t.prepared(ctx, query, args, v); handled {
		return t.c.check(err)
	}
	return t.c.check(t.Tx.Query(ctx, query, args, v))
}

// prepared runs the statement through the pool's prepared statements when
// it can. A write's statements are the same few texts every time, and
// compiling them was a twentieth of the server's CPU under the REST mix
// with 10 % writes on SQLite (docs/performance.md, "Prepared statements").
func (t *countingTx) prepared(ctx context.Context, query string, args, v any) (bool, error) {
	if t.sqlTx == nil || t.c.stmts == nil {
		return false, nil
	}
	argv, ok := args.([]any)
	if !ok {
		return false, nil
	}
	handled, err := t.c.stmts.inTx(ctx, t.sqlTx, query, argv, v)
	if !handled && len(t.pending) < maxPendingPerTx && len(argv) <= maxOfferedArgs && preparable(query) && !slices.Contains(t.pending, query) {
		t.pending = append(t.pending, query)
	}
	return handled, err
}

// offerPending offers the preparer the texts the transaction ran
// unprepared, now that it has committed (a rolled-back transaction's are
// offered by the next one to commit them).
func (t *countingTx) offerPending() {
	for _, q := range t.pending {
		t.c.stmts.prepareLater(q)
	}
}

// statement passes query to the injected faults, if any.
func (t *countingTx) statement(query string) error {
	if t.fault != nil {
		t.fault.ran(query)
	}
	return t.c.statementFault(query)
}

func (t *countingTx) Commit() error {
	if t.fault != nil {
		t.fault.mu.Lock()
		queries := append([]string(nil), t.fault.queries...)
		t.fault.mu.Unlock()
		return t.c.check(t.fault.commit(queries, t.Tx.Commit, t.Tx.Rollback))
	}
	if err := t.Tx.Commit(); err != nil {
		return t.c.check(err)
	}
	t.offerPending()
	return nil
}

// Driver returns the counting driver, for hand-built statements that must be
// counted like ent's own.
func (db *DB) Driver() dialect.Driver { return db.counter }
