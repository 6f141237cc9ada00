package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// lifetime is a flag.Value for a positive length of time, as
// time.ParseDuration reads it plus days ("30d", "1d12h"): token lifetimes
// are thought of in days, which Go durations have no unit for. A day is
// 24 hours (the lifetime is counted from now, calendar changes aside).
type lifetime struct{ d time.Duration }

func (l *lifetime) String() string {
	if l == nil || l.d == 0 {
		return ""
	}
	return l.d.String()
}

func (l *lifetime) Set(s string) error {
	d, err := parseLifetime(s)
	if err != nil {
		return err
	}
	l.d = d
	return nil
}

const day = 24 * time.Hour

// errTooLong refuses what time.Duration cannot hold (about 292 years).
var errTooLong = fmt.Errorf("too long: at most %d days", math.MaxInt64/int64(day))

// parseLifetime reads s as a sequence of number-unit pairs: the units of
// time.ParseDuration and d for days. Its error is worded for the flag
// package, which prefixes it with the flag's name and value.
func parseLifetime(s string) (time.Duration, error) {
	const want = "want a positive duration such as 30d, 1d12h, 36h or 90m"
	if s == "" {
		return 0, errors.New(want)
	}
	rest := strings.TrimPrefix(s, "+")
	if strings.HasPrefix(rest, "-") {
		return 0, errors.New("must be positive: " + want)
	}
	var total time.Duration
	for rest != "" {
		// One pair: a number, then a unit (letters, µ included).
		n := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if n <= 0 {
			return 0, errors.New(want)
		}
		u := n + strings.IndexFunc(rest[n:], func(r rune) bool { return r >= '0' && r <= '9' || r == '.' })
		if u < n {
			u = len(rest)
		}
		number, unit := rest[:n], rest[n:u]
		var part time.Duration
		if unit == "d" {
			days, err := strconv.ParseFloat(number, 64)
			if err != nil {
				return 0, errors.New(want)
			}
			if days*float64(day) >= math.MaxInt64 {
				return 0, errTooLong
			}
			part = time.Duration(days * float64(day))
		} else {
			var err error
			if part, err = time.ParseDuration(number + unit); err != nil {
				return 0, errors.New(want)
			}
		}
		if total > math.MaxInt64-part {
			return 0, errTooLong
		}
		total += part
		rest = rest[u:]
	}
	if total <= 0 {
		return 0, errors.New("must be positive (omit the flag for no expiry): " + want)
	}
	return total, nil
}
