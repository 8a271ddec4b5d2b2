// Package version is what roomhub is: one version for the binary, the Helm
// chart, the web package and the API's spec (a test holds them equal), and
// the build's revision when Go recorded one.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is roomhub's version. A release build may set it:
//
//	go build -ldflags "-X roomhub/internal/version.Version=0.3.1" .
var Version = "0.3.0"

// Info is the build: its version, the VCS revision Go stamped into it (""
// when none: go run, a build outside the repository) and the Go version.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"goVersion"`
}

// Get is this build's Info.
func Get() Info {
	i := Info{Version: Version, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				i.Revision = s.Value
			}
		}
	}
	return i
}

// String is the build in one line: "roomhub 0.3.0 (abc1234, go1.26.8)".
func (i Info) String() string {
	rev := i.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		rev += ", "
	}
	return "roomhub " + i.Version + " (" + rev + i.GoVersion + ")"
}
