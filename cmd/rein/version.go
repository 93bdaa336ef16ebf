package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version, when set at build time with -ldflags "-X main.version=v1.2.3",
// overrides the module version the build info holds.
var version string

// buildInfo is what `rein version` reports, from the binary's build info.
type buildInfo struct {
	// Version is the module version ("v0.3.0" for go install …@v0.3.0, a
	// pseudo-version for a build in a git checkout), else "(devel)".
	Version string `json:"version"`
	// Revision, Time and Modified describe the VCS checkout the binary was
	// built from, when the go command recorded it.
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform,omitempty"`
}

// readBuildInfo reads the running binary's build info; a binary without
// one (a test binary) reports "(devel)".
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		b.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			b.Version = v
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			b.Platform = goos + "/" + goarch
		}
	}
	if version != "" {
		b.Version = version
	}
	return b
}

// short is the one-line version: "v0.3.0", or "(devel) 1a2b3c4d5e6f-dirty
// 2026-12-04T21:00:00Z" when the build info names a checkout.
func (b buildInfo) short() string {
	parts := []string{b.Version}
	if b.Revision != "" && !strings.Contains(b.Version, shortRev(b.Revision)) {
		rev := shortRev(b.Revision)
		if b.Modified {
			rev += "-dirty"
		}
		parts = append(parts, rev)
		if b.Time != "" {
			parts = append(parts, b.Time)
		}
	}
	return strings.Join(parts, " ")
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

func newVersionCmd(s *streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print rein's version, from the binary's build info (also: rein --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat("--output", output); err != nil {
				return err
			}
			b := readBuildInfo()
			if output == "json" {
				return encodeJSON(s, b)
			}
			fmt.Fprintln(s.out, "rein", b.short())
			if b.GoVersion != "" {
				fmt.Fprintf(s.out, "  go       %s %s\n", b.GoVersion, b.Platform)
			}
			if b.Revision != "" {
				fmt.Fprintf(s.out, "  revision %s", b.Revision)
				if b.Modified {
					fmt.Fprint(s.out, " (modified)")
				}
				fmt.Fprintln(s.out)
			}
			if b.Time != "" {
				fmt.Fprintf(s.out, "  time     %s\n", b.Time)
			}
			return nil
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
