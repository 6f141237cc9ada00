package cli

import (
	"runtime/debug"
	"strings"
)

// Version is the binary's version and commit as the Go toolchain stamped
// them: "v1.2.3" for a module installed at a version, "(devel)" for a
// build of a checkout, then the commit (with "+dirty" for a build of
// uncommitted changes) and its time, when the build recorded them (go
// build and go install of a git checkout do, unless -buildvcs=false; go
// run does not).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module information)"
	}
	var commit, when, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	var b strings.Builder
	b.WriteString(info.Main.Version)
	if commit == "" {
		b.WriteString(", commit unknown (built without version control information: go run, or -buildvcs=false)")
	} else {
		b.WriteString(", commit " + commit + dirty)
		if when != "" {
			b.WriteString(" (" + when + ")")
		}
	}
	b.WriteString(", " + info.GoVersion)
	return b.String()
}
