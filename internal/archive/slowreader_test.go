//go:build unix

package archive_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/procsvc/procsvc/bench"
	"github.com/procsvc/procsvc/internal/archive"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// tinyBuffer is the socket buffer of both ends of a stalled download: the
// kernel's smallest, so that the server's writes block soon.
const tinyBuffer = 4096

// setBuffer sets a socket buffer option on c's descriptor.
func setBuffer(c syscall.RawConn, option int) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, option, tinyBuffer)
	}); err != nil {
		return err
	}
	return serr
}

// countingWriter counts the archive lines the response writer accepted.
type countingWriter struct {
	http.ResponseWriter
	lines *atomic.Int64
}

// Unwrap lets the handler move the connection's write deadline.
func (w countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err == nil && n == len(p) {
		w.lines.Add(1)
	}
	return n, err
}

// TestAClientThatStopsReadingStopsTheExport: a download whose client reads
// nothing holds the server to what the sockets' buffers took and one page
// more: the export reads a page only once the one before is written, so it
// stops reading when the client stops, until the server's write timeout
// fails its write, which ends the export and its read transaction (the
// pool has no connection in use afterwards). It is the server's write
// timeout when the download has no idle bound, and the idle bound
// (--stream-write-timeout) when it has one, which lifts the server's.
// Nothing here waits on a clock: the handler's end is a channel, and the
// bound is a count.
func TestAClientThatStopsReadingStopsTheExport(t *testing.T) {
	for _, c := range []struct {
		name              string
		serverWrite, idle time.Duration
	}{
		{"the server's write timeout", time.Second, 0},
		// No server write timeout at all: only the idle bound ends it.
		{"the idle bound", 0, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) { stalledDownload(t, c.serverWrite, c.idle) })
	}
}

func stalledDownload(t *testing.T, serverWrite, idle time.Duration) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		ctx := context.Background()
		shape := bench.Shape{Procedures: 3000, Projects: 3, Categories: 2, Members: 3, MaxComments: 1}
		seeded, err := bench.Seed(ctx, db.Client, "Big", "BIG", shape, 1)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := core.New(db.Client).ActAsAdmin(ctx, seeded.WorkspaceID.String())
		if err != nil {
			t.Fatal(err)
		}
		const pageSize = 50
		var read, accepted atomic.Int64
		done := make(chan struct{})
		export := archive.Handler(db.Client, slog.New(slog.NewTextHandler(io.Discard, nil)), archive.ExportOptions{
			Dialect: db.Dialect, PageSize: pageSize, IdleTimeout: idle,
			PageRead: func(_ string, n int) { read.Add(int64(n)) },
		})
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(done)
			// The admin, as authentication would have put them.
			export.ServeHTTP(countingWriter{w, &accepted}, r.WithContext(admin))
		}))
		// The server's write timeout, as --write-timeout sets it, and a
		// tiny send buffer on the server's side of the connection.
		srv.Config.WriteTimeout = serverWrite
		srv.Config.ConnState = tinySendBuffer(t)
		srv.Start()
		defer srv.Close()

		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error { return setBuffer(c, syscall.SO_RCVBUF) }}
		conn, err := d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "GET /workspace/export HTTP/1.1\r\nHost: procsvc\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// Read nothing; the handler ends once its write times out.
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatal("the export of a client that reads nothing did not end")
		}
		total := int64(1 + shape.Members + shape.Projects + shape.Categories + shape.Procedures)
		t.Logf("read %d records of at least %d; the response writer accepted %d lines", read.Load(), total, accepted.Load())
		if read.Load() >= total {
			t.Fatalf("the export read %d records for a client that read nothing: the workspace's %d at least", read.Load(), total)
		}
		// The header and the workspace's line are not read in pages.
		if ahead := read.Load() - (accepted.Load() - 2); ahead > pageSize {
			t.Fatalf("the export read %d records more than it wrote: more than a page (%d)", ahead, pageSize)
		}
		if inUse := db.SQL.Stats().InUse; inUse != 0 {
			t.Fatalf("%d database connections still in use after the export ended", inUse)
		}
	})
}

// tinySendBuffer gives the server's side of each connection the smallest
// send buffer, so that its writes block as soon as the client stops.
func tinySendBuffer(t *testing.T) func(net.Conn, http.ConnState) {
	return func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rc, err := c.(*net.TCPConn).SyscallConn()
			if err == nil {
				err = setBuffer(rc, syscall.SO_SNDBUF)
			}
			if err != nil {
				t.Error(err)
			}
		}
	}
}

// TestASlowSteadyDownloadOutlastsTheWriteTimeout: a client that keeps
// reading, slowly, gets the whole archive although the download takes
// longer than the server's write timeout (each write is bounded, not the
// whole: a large workspace over a slow link), and the export's own timeout
// still ends a download that takes longer than it, however steadily the
// client reads. The client's pace sets a floor on the download's length
// (pauses between reads), never a ceiling the test waits for.
func TestASlowSteadyDownloadOutlastsTheWriteTimeout(t *testing.T) {
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Big", "BIG", bench.Shape{Procedures: 300, Projects: 3, Categories: 2, Members: 3, MaxComments: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := core.New(db.Client).ActAsAdmin(ctx, seeded.WorkspaceID.String())
	if err != nil {
		t.Fatal(err)
	}
	const serverWrite = time.Second
	for _, c := range []struct {
		name     string
		timeout  time.Duration
		complete bool
	}{
		{"within the export timeout", time.Hour, true},
		{"past the export timeout", serverWrite / 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			export := archive.Handler(db.Client, slog.New(slog.NewTextHandler(io.Discard, nil)), archive.ExportOptions{
				Dialect: db.Dialect, IdleTimeout: 10 * serverWrite, Timeout: c.timeout,
			})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				export.ServeHTTP(w, r.WithContext(admin))
			}))
			srv.Config.WriteTimeout = serverWrite
			srv.Config.ConnState = tinySendBuffer(t)
			srv.Start()
			defer srv.Close()
			d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error { return setBuffer(c, syscall.SO_RCVBUF) }}
			client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
			started := time.Now()
			resp, err := client.Get(srv.URL + archive.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body []byte
			buf := make([]byte, tinyBuffer)
			for {
				n, err := resp.Body.Read(buf)
				body = append(body, buf[:n]...)
				if err != nil {
					break
				}
				time.Sleep(50 * time.Millisecond) // the slow link
			}
			took := time.Since(started)
			complete := bytes.Contains(body, []byte(`{"type":"trailer"`))
			t.Logf("%d bytes in %s (the server's write timeout: %s), complete: %t", len(body), took.Round(time.Millisecond), serverWrite, complete)
			if complete != c.complete {
				t.Fatalf("complete %t, want %t", complete, c.complete)
			}
			if c.complete && took <= serverWrite {
				t.Fatalf("the download took %s, not longer than the server's write timeout (%s): the test proves nothing; seed more", took, serverWrite)
			}
		})
	}
}

// TestExportMemoryIsAPage reports the heap an export of a large workspace
// takes at its peak beside the archive's size: what "bounded by a page"
// means in bytes (docs/operations.md, "Workspace export and import").
func TestExportMemoryIsAPage(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	db := dbtest.Open(t, "sqlite")
	ctx := context.Background()
	seeded, err := bench.Seed(ctx, db.Client, "Big", "BIG", bench.Shape{Procedures: 20_000, Projects: 10, Categories: 5, Members: 5, MaxComments: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := core.New(db.Client).ActAsAdmin(ctx, seeded.WorkspaceID.String())
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		peak uint64
		ms   runtime.MemStats
	)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	size := &sizeWriter{}
	_, err = archive.Export(admin, db.Client, size, archive.ExportOptions{Dialect: db.Dialect, PageRead: func(string, int) {
		mu.Lock()
		defer mu.Unlock()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > peak {
			peak = ms.HeapAlloc
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var above uint64
	if peak > base {
		above = peak - base
	}
	t.Logf("archive of %d bytes; heap at most %d KB above its start while exporting", size.n, above>>10)
	if above >= uint64(size.n) {
		t.Fatalf("the export held %d bytes at once for an archive of %d: the whole workspace", above, size.n)
	}
}

// sizeWriter counts what is written, and passes it on to w if set.
type sizeWriter struct {
	n int
	w io.Writer
}

func (w *sizeWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.w != nil {
		return w.w.Write(p)
	}
	return len(p), nil
}
