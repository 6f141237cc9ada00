package config_test

import (
	"io"

	"github.com/procsvc/procsvc/internal/config"
)

// loadServe is serve's configuration from args, then from the environment
// env (a flag given on the command line wins), as the settings tests read
// it.
func loadServe(args []string, env map[string]string) (config.Config, error) {
	var c config.Config
	fs, applyEnv := c.FlagSet("serve", io.Discard)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, applyEnv(func(k string) string { return env[k] })
}
