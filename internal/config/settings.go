package config

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The kinds of setting: each binds a flag and reads its environment
// variable into the Config's field p, the flag winning (FlagSet).

func str(p *string, name, env, usage string) setting {
	return setting{flag: name, env: env, usage: usage,
		bind:    func(fs *flag.FlagSet, n, u string) { fs.StringVar(p, n, *p, u) },
		fromEnv: func(v string) error { *p = v; return nil }}
}

// list is a comma-separated list, given once.
func list(p *[]string, name, env, usage string) setting {
	set := func(v string) error {
		*p = nil
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*p = append(*p, part)
			}
		}
		return nil
	}
	return setting{flag: name, env: env, usage: usage,
		bind:    func(fs *flag.FlagSet, n, u string) { fs.Func(n, u, set) },
		fromEnv: set}
}

func boolean(p *bool, name, env, usage string) setting {
	return setting{flag: name, env: env, usage: usage,
		bind: func(fs *flag.FlagSet, n, u string) { fs.BoolVar(p, n, *p, u) },
		fromEnv: func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("not true or false")
			}
			*p = b
			return nil
		}}
}

func num(p *int, name, env, usage string) setting {
	return setting{flag: name, env: env, usage: usage,
		bind: func(fs *flag.FlagSet, n, u string) { fs.IntVar(p, n, *p, u) },
		fromEnv: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errors.New("not a whole number")
			}
			*p = n
			return nil
		}}
}

func float(p *float64, name, env, usage string) setting {
	return setting{flag: name, env: env, usage: usage,
		bind: func(fs *flag.FlagSet, n, u string) { fs.Float64Var(p, n, *p, u) },
		fromEnv: func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.New("not a number")
			}
			*p = f
			return nil
		}}
}

// workspaceRates is a repeatable flag (and a comma list in the environment)
// of WORKSPACE_ID=RATE/BURST or WORKSPACE_ID=0 entries.
func workspaceRates(p *map[string]WorkspaceRate, name, env, usage string) setting {
	v := workspaceRateList{p}
	return setting{flag: name, env: env, usage: usage,
		bind:    func(fs *flag.FlagSet, n, u string) { fs.Var(v, n, u) },
		fromEnv: v.Set}
}

type workspaceRateList struct{ m *map[string]WorkspaceRate }

func (l workspaceRateList) String() string {
	if l.m == nil {
		return ""
	}
	var parts []string
	for id, r := range *l.m {
		if r.Rate == 0 {
			parts = append(parts, id+"=0")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%d", id, strconv.FormatFloat(r.Rate, 'g', -1, 64), r.Burst))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Set adds the entries of v, a comma list.
func (l workspaceRateList) Set(v string) error {
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, limit, ok := strings.Cut(entry, "=")
		ws, err := uuid.Parse(strings.TrimSpace(id))
		if !ok || err != nil {
			return fmt.Errorf("%q: want WORKSPACE_ID=RATE/BURST (or WORKSPACE_ID=0), with a workspace id such as procsvc workspace list prints", entry)
		}
		var r WorkspaceRate
		rate, burst, hasBurst := strings.Cut(strings.TrimSpace(limit), "/")
		r.Rate, err = strconv.ParseFloat(rate, 64)
		if err != nil || r.Rate < 0 || math.IsNaN(r.Rate) || math.IsInf(r.Rate, 0) {
			return fmt.Errorf("%q: the rate must be 0 (no limit) or a positive number of tokens per second", entry)
		}
		if r.Rate > 0 || hasBurst {
			r.Burst, err = strconv.Atoi(burst)
			if err != nil || r.Burst < 1 {
				return fmt.Errorf("%q: want WORKSPACE_ID=RATE/BURST with a whole burst of at least 1", entry)
			}
		}
		if *l.m == nil {
			*l.m = map[string]WorkspaceRate{}
		}
		if _, dup := (*l.m)[ws.String()]; dup {
			return fmt.Errorf("%q: workspace %s is given twice", entry, ws)
		}
		(*l.m)[ws.String()] = r
	}
	return nil
}

// DurationHint says why v is not a duration and how one is written: a
// number without its unit ("5") is told to add one ("5s").
func DurationHint(v string) string {
	if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && strings.TrimSpace(v) != "0" {
		return fmt.Sprintf("a duration needs its unit: %ss (seconds), %sms or %sm, for instance", strings.TrimSpace(v), strings.TrimSpace(v), strings.TrimSpace(v))
	}
	return "not a duration such as 30s, 500ms or 2m"
}

func dur(p *time.Duration, name, env, usage string) setting {
	return setting{flag: name, env: env, usage: usage,
		bind: func(fs *flag.FlagSet, n, u string) { fs.DurationVar(p, n, *p, u) },
		fromEnv: func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return errors.New(DurationHint(v))
			}
			*p = d
			return nil
		}}
}
