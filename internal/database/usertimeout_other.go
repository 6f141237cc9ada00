//go:build !linux

package database

import (
	"syscall"
	"time"
)

// setUserTimeout: TCP_USER_TIMEOUT is Linux's; elsewhere the keepalives and
// the probe (monitor.go) find a silent server.
func setUserTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
