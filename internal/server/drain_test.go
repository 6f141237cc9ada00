package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestShutdownDrainsInFlightRequests: a request that is running when the
// stop signal arrives still completes, while new connections are refused.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "finished")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(ctx, srv, ln, 30*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-entered
	stop() // what SIGTERM does in main
	// Shutdown closes the listener first: wait until new connections fail.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		runtime.Gosched()
	}
	select {
	case err := <-done:
		t.Fatalf("server stopped before the in-flight request finished: %v", err)
	default:
	}
	close(release)
	r := <-got
	if r.err != nil || !strings.Contains(r.body, "finished") {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serveUntil: %v", err)
	}
}

// TestShutdownGivesUpAfterTheDrainTimeout: a request that never finishes
// cannot hold the process forever.
func TestShutdownGivesUpAfterTheDrainTimeout(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(ctx, srv, ln, 50*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	go http.Get("http://" + ln.Addr().String() + "/stuck") //nolint:errcheck
	<-entered
	stop()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("want a drain timeout error, got %v", err)
	}
}
