package database_test

// How the PostgreSQL pools behave when their server fails over: a silent
// server has its connections aborted by the probe, a read-only one has its
// connection discarded, and reads pinned to the read pool stay on one
// server. The whole failover, with a real standby, is internal/server's
// TestFailover.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/pgcluster"
	"github.com/procsvc/procsvc/internal/viewer"
)

// fastProbe finds a silent server within half a second.
var fastProbe = database.Options{ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond, ConnectTimeout: time.Second}

// viaProxy returns rawURL with its host replaced by a proxy to it.
func viaProxy(t *testing.T, rawURL string) (string, *pgcluster.Proxy) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p := pgcluster.NewProxy(t, u.Host)
	u.Host = fmt.Sprintf("127.0.0.1:%d", p.Port())
	return u.String(), p
}

func TestSilentServerIsAborted(t *testing.T) {
	if !hasPostgres() {
		t.Skip("PostgreSQL only")
	}
	raw, proxy := viaProxy(t, dbtest.CreatePostgres(t))
	db, err := database.Open(context.Background(), raw, fastProbe)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Health(); err != nil {
		t.Fatalf("healthy server reported %v", err)
	}
	// A statement waiting on the server when it goes silent, and one sent
	// after, both fail within a probe or so, not at their deadline.
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := db.SQL.ExecContext(ctx, "SELECT pg_sleep(2)")
		waiting <- err
	}()
	time.Sleep(200 * time.Millisecond)
	proxy.Silence()
	select {
	case err := <-waiting:
		if err == nil || apperr.CodeOf(apperr.Map(err)) != apperr.Unavailable {
			t.Fatalf("statement on the silenced server: %v (%s); want unavailable", err, apperr.CodeOf(apperr.Map(err)))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a statement on a silent server still waits after 10 s")
	}
	if err := db.Health(); err == nil {
		t.Fatal("Health is nil while the server is silent")
	}
	// A new connection gives up on its own (connect_timeout), long
	// before the caller's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.Ping(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Ping through a silent proxy: %v (deadline reached: %v); want its own failure", err, ctx.Err())
	}

	proxy.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for db.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("still unhealthy 10 s after the server answers again: %v", db.Health())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping after the server came back: %v", err)
	}
}

func TestReadOnlyConnectionIsDiscarded(t *testing.T) {
	if !hasPostgres() {
		t.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	db, err := database.Open(ctx, dbtest.CreatePostgres(t), database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The pool's one connection turns read-only, as a connection to a
	// demoted primary (or a PgBouncer pointed at a standby) would be.
	if _, err := db.SQL.ExecContext(ctx, "SET SESSION default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	_, err = db.SQL.ExecContext(ctx, "CREATE TABLE t (id int)")
	if err == nil {
		t.Fatal("a write on a read-only session succeeded")
	}
	if e := apperr.From(err); e == nil || e.Code != apperr.Unavailable {
		t.Fatalf("a write on a read-only server: %v; want unavailable", err)
	}
	// That connection is gone: the next one is read-write.
	var ro string
	if err := db.SQL.QueryRowContext(ctx, "SHOW default_transaction_read_only").Scan(&ro); err != nil {
		t.Fatal(err)
	}
	if ro != "off" {
		t.Fatal("the read-only connection went back to the pool")
	}
	if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatalf("a write after the read-only connection was discarded: %v", err)
	}
}

// TestNoServerFitsIsUnavailable: while every host of the URL is down or a
// standby, lib/pq's untyped errors are a lost connection, answered 503.
func TestNoServerFitsIsUnavailable(t *testing.T) {
	for _, msg := range []string{
		"pq: could not connect to any of the hosts:\nconnecting to 127.0.0.1:1: server is in hot standby mode",
		"server is in hot standby mode",
		"session is read-only",
	} {
		err := errors.New(msg)
		if !database.ConnectionLost(err) {
			t.Errorf("ConnectionLost(%q) = false", msg)
		}
		if e := database.Classify(err); e == nil || e.Code != apperr.Unavailable {
			t.Errorf("Classify(%q) = %v; want unavailable", msg, e)
		}
	}
}

// TestHostsTriedInOrderThenSticky: with a dead first host, the first
// connection goes to the second, and later ones try it first.
func TestHostsTriedInOrderThenSticky(t *testing.T) {
	if !hasPostgres() {
		t.Skip("PostgreSQL only")
	}
	u, err := url.Parse(dbtest.CreatePostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	dead, deadProxy := viaProxy(t, u.String())
	du, _ := url.Parse(dead)
	proxyPort, directPort := du.Port(), u.Port()
	q := u.Query()
	q.Set("port", proxyPort+","+directPort)
	q.Set("connect_timeout", "2")
	u.Host = "127.0.0.1,127.0.0.1"
	u.RawQuery = q.Encode()
	db, err := database.Open(context.Background(), u.String(), database.Options{ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The proxy works: the first connection goes through it. Silence it:
	// the next connection times out on it once, then goes direct, and
	// sticks there.
	if err := db.SQL.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.SQL.SetMaxIdleConns(0)
	deadProxy.Silence()
	var port int
	if err := db.SQL.QueryRowContext(context.Background(), "SELECT inet_server_port()").Scan(&port); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(port) != directPort {
		t.Fatalf("connected to port %d; want the direct %s", port, directPort)
	}
	// That connection tried the silent host first; later ones do not.
	tried := deadProxy.Accepted()
	for range 3 {
		if err := db.SQL.QueryRowContext(context.Background(), "SELECT inet_server_port()").Scan(&port); err != nil {
			t.Fatal(err)
		}
	}
	if n := deadProxy.Accepted() - tried; n != 0 {
		t.Fatalf("%d later connections tried the silent host again", n)
	}
}

func TestReadsAtPinsTheReadPool(t *testing.T) {
	if !hasPostgres() {
		t.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	raw := dbtest.CreatePostgres(t)
	named := func(name string) string {
		u, _ := url.Parse(raw)
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		return u.String()
	}
	db, err := database.Open(ctx, named("primary"), database.Options{ReadURL: named("reads"), Prepare: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ws, err := db.Client.Workspace.Create().SetName("W").SetKey("WS").Save(viewer.System(ctx))
	if err != nil {
		t.Fatal(err)
	}
	servedBy := func(ctx context.Context) string {
		t.Helper()
		var name string
		var r entsql.Rows
		if err := db.Driver().Query(ctx, "SELECT current_setting('application_name')", []any{}, &r); err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if !r.Next() {
			t.Fatal("no row")
		}
		if err := r.Scan(&name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	if got := servedBy(ctx); got != "primary" {
		t.Fatalf("an unpinned read went to %q", got)
	}
	pinned, version, ok := db.ReadsAt(ctx, ws.ID)
	if !ok || version != ws.Version {
		t.Fatalf("ReadsAt = %d, %v; want %d, true", version, ok, ws.Version)
	}
	for range 3 {
		if got := servedBy(pinned); got != "reads" {
			t.Fatalf("a pinned read went to %q", got)
		}
	}
	// Once the read pool moves to another server, the pinned request's
	// reads go to the primary: the new server may be behind the version
	// the request read.
	db.MoveReadPool()
	if got := servedBy(pinned); got != "primary" {
		t.Fatalf("a read pinned to a pool that moved went to %q", got)
	}
	// Writes never go to the read pool.
	tx, err := db.Client.Tx(pinned)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Workspace.UpdateOneID(ws.ID).AddVersion(1).Save(viewer.System(pinned)); err != nil {
		t.Fatalf("a write in a pinned request: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(db.Pools()), "read") {
		t.Fatalf("Pools() = %v; want the read pool's state", db.Pools())
	}
}

// TestReadPoolReturnsToTheStandby: a prefer-standby read pool that had to
// fall back to the primary (its standby was down) goes back to the
// standby once it is up.
func TestReadPoolReturnsToTheStandby(t *testing.T) {
	pgcluster.Bin(t)
	c := pgcluster.New(t, pgcluster.Options{})
	c.Primary.Exec(t, "CREATE DATABASE procsvc")
	c.WaitReplayed(t, 30*time.Second)
	c.Standby.Stop(t, "fast")
	reads := fmt.Sprintf("postgres://postgres@127.0.0.1,127.0.0.1/procsvc?port=%d,%d&target_session_attrs=prefer-standby&sslmode=disable", c.Standby.Port, c.Primary.Port)
	opts := fastProbe
	opts.ReadURL = reads
	db, err := database.Open(context.Background(), c.Primary.URL("procsvc"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	readPool := func() database.PoolState {
		for _, p := range db.Pools() {
			if p.Pool == "read" {
				return p
			}
		}
		t.Fatal("no read pool")
		return database.PoolState{}
	}
	if p := readPool(); p.Standby || p.Server != fmt.Sprintf("127.0.0.1:%d", c.Primary.Port) {
		t.Fatalf("with the standby down, the read pool is on %+v; want the primary", p)
	}
	c.Standby.Start(t)
	deadline := time.Now().Add(15 * time.Second)
	for !readPool().Standby {
		if time.Now().After(deadline) {
			t.Fatalf("the read pool stayed on %+v after the standby came back", readPool())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// And the pool's own connections follow: the next read is on the
	// standby (those to the primary belong to the pool's previous
	// generation, closed instead of reused).
	var recovery bool
	if err := db.ReadPoolQueryRow(context.Background(), "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil {
		t.Fatal(err)
	}
	if !recovery {
		t.Fatal("the read pool's next read went to the primary")
	}
}

// TestPreferStandbyWithEveryHostDown: a prefer-standby read URL whose
// hosts all refuse connections fails, and soon. (lib/pq's own
// prefer-standby loops forever on it.)
func TestPreferStandbyWithEveryHostDown(t *testing.T) {
	if !hasPostgres() {
		t.Skip("PostgreSQL only")
	}
	dead := func() int { // a port nothing listens on
		p := pgcluster.NewProxy(t, "127.0.0.1:1")
		port := p.Port()
		p.Close()
		return port
	}
	reads := fmt.Sprintf("postgres://postgres@127.0.0.1,127.0.0.1/procsvc?port=%d,%d&target_session_attrs=prefer-standby&sslmode=disable", dead(), dead())
	opened := make(chan error, 1)
	go func() {
		opts := fastProbe
		opts.ReadURL = reads
		db, err := database.Open(context.Background(), dbtest.CreatePostgres(t), opts)
		if err == nil {
			db.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err == nil || !strings.Contains(err.Error(), "read URL") {
			t.Fatalf("Open with no reachable read host: %v; want the read URL's error", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Open still connects to a prefer-standby URL with every host down after 15 s")
	}
}

// TestProbeAsksAgainAfterItsConnectionDied: every backend terminated, the
// server up: the probe's kept connection is dead, and the probe asks again
// on a new one rather than calling the server unhealthy (it did, and
// /readyz answered 503 until the next probe, internal/server's
// TestReadinessFollowsTheDatabase failing when a probe fell there).
func TestProbeAsksAgainAfterItsConnectionDied(t *testing.T) {
	dbtest.NeedPostgres(t)
	rawURL := dbtest.CreatePostgres(t)
	// Probed only when the test says (an interval no test outlasts).
	db, err := database.Open(context.Background(), rawURL, database.Options{ProbeInterval: time.Hour, ProbeTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.ProbePrimary()
	if err := db.Health(); err != nil {
		t.Fatalf("before: %v", err)
	}
	for round := range 3 {
		dbtest.TerminateBackends(t, rawURL)
		db.ProbePrimary()
		if err := db.Health(); err != nil {
			t.Fatalf("round %d: after the backends were terminated (the server up): %v", round, err)
		}
	}
}
