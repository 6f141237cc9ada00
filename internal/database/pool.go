package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"
)

// pool is one PostgreSQL connection pool: the primary's, or the read pool
// of standbys (Options.ReadURL).
type pool struct {
	name  string
	sql   *sql.DB
	drv   *entsql.Driver
	conn  *connector
	mon   *monitor   // nil when probes are off
	stmts *stmtCache // the read pool's prepared statements (Options.Prepare)
}

// openPool opens the pool of rawURL (not yet probed: startProbe).
func openPool(name, rawURL string, opts Options, maxOpen int, wantPrimary bool) (*pool, error) {
	dsn, err := postgresDSN(rawURL, opts.sessionParams(), opts.connectTimeout())
	if err != nil {
		return nil, err
	}
	c, err := newConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("database: invalid PostgreSQL URL: %w", redact(err))
	}
	sqlDB := sql.OpenDB(c)
	sqlDB.SetMaxOpenConns(maxOpen)
	sqlDB.SetMaxIdleConns(maxOpen)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	p := &pool{name: name, sql: sqlDB, drv: entsql.OpenDB(dialect.Postgres, sqlDB), conn: c}
	if opts.ProbeInterval >= 0 {
		if opts.ProbeInterval == 0 {
			opts.ProbeInterval = DefaultProbeInterval
		}
		if opts.ConnectTimeout == 0 {
			opts.ConnectTimeout = DefaultConnectTimeout
		}
		p.mon = newMonitor(name, c, wantPrimary, opts)
	}
	return p, nil
}

// openReadPool opens and pings the read pool of opts.ReadURL.
func openReadPool(ctx context.Context, opts Options, maxOpen int) (*pool, error) {
	p, err := openPool("read", opts.ReadURL, opts, maxOpen, false)
	if err != nil {
		return nil, fmt.Errorf("database: read URL: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.sql.PingContext(pingCtx); err != nil {
		p.sql.Close()
		return nil, fmt.Errorf("database: cannot reach the read URL's servers: %w", err)
	}
	if opts.Prepare {
		p.stmts = newStmtCache(p.sql)
	}
	return p, nil
}

func (o Options) connectTimeout() time.Duration {
	if o.ConnectTimeout > 0 {
		return o.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (p *pool) startProbe() {
	if p != nil && p.mon != nil {
		p.mon.start()
	}
}

// close stops the probe; the read pool's connections are closed too (the
// primary's are the ent client's to close).
func (p *pool) close() {
	if p == nil {
		return
	}
	if p.mon != nil {
		p.mon.close()
	}
	if p.name == "read" {
		if p.stmts != nil {
			p.stmts.close()
		}
		p.sql.Close()
	}
}

// Health reports whether writes can reach a primary: the last probe of the
// primary pool got an answer from a server not in recovery. It is nil on
// SQLite and when probes are off.
func (db *DB) Health() error {
	p := db.counter.primary
	if p == nil || p.mon == nil {
		return nil
	}
	if st := p.mon.State(); !st.Healthy {
		return st.Err
	}
	return nil
}

// Pools returns what the probes last found of each PostgreSQL pool, for
// the metrics: the primary's, then the read pool's when there is one.
func (db *DB) Pools() []PoolState {
	var out []PoolState
	for _, p := range []*pool{db.counter.primary, db.counter.read} {
		if p != nil && p.mon != nil {
			out = append(out, p.mon.State())
		}
	}
	return out
}

// HasReadPool reports whether reads may go to standbys (Options.ReadURL).
func (db *DB) HasReadPool() bool { return db.counter.read != nil }

// readPin ties a request's reads to the read pool's server its first read
// went to (the generation of the pool then).
type readPin struct {
	owner      *connector
	generation uint64
}

type readPinKey struct{}

// errGenerationMoved refuses a pinned read on a connection of another
// generation: the read goes to the primary instead.
var errGenerationMoved = errors.New("database: the read pool moved to another server")

// ReadsAt lets the reads of ctx's request go to the read pool, and returns
// the workspace's version there, which is what those reads will see at
// least. Every later statement of ctx outside a transaction then runs on
// the read pool's current server (the primary's pool serves it instead
// if the read pool moves to another server meanwhile, so that no read sees
// older data than this version). ok is false, and ctx unchanged, without a
// read pool or when it cannot answer now: the request reads the primary.
func (db *DB) ReadsAt(ctx context.Context, workspaceID uuid.UUID) (_ context.Context, version int64, ok bool) {
	r := db.counter.read
	if r == nil {
		return ctx, 0, false
	}
	pinned := context.WithValue(ctx, readPinKey{}, &readPin{owner: r.conn, generation: r.conn.generation.Load()})
	db.counter.observe(versionQuery, []any{workspaceID})
	if err := r.sql.QueryRowContext(pinned, versionQuery, workspaceID).Scan(&version); err != nil {
		return ctx, 0, false
	}
	return pinned, version, true
}

// versionQuery reads a workspace's version (a system read: the request's
// viewer was authenticated in that workspace).
const versionQuery = `SELECT "version" FROM "workspaces" WHERE "id" = $1`

// reading returns the read pool when ctx's reads are pinned to it.
func (c *counter) reading(ctx context.Context) *pool {
	if c.read == nil {
		return nil
	}
	pin, ok := ctx.Value(readPinKey{}).(*readPin)
	if !ok || pin.owner != c.read.conn || pin.generation != c.read.conn.generation.Load() {
		return nil
	}
	return c.read
}
