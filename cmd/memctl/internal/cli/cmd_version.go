package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildInfo is what memctl version reports.
type buildInfo struct {
	Version   string `json:"version"`
	Module    string `json:"module"`
	Revision  string `json:"vcs_revision,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	Modified  bool   `json:"vcs_modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// readBuildInfo reads the module version memctl was built as: a release
// tag for go install ...@v1.2.3, "(devel)" for a build in a checkout,
// with the VCS revision the go command stamped.
func readBuildInfo() buildInfo {
	bi := buildInfo{Version: "(unknown)", Module: "github.com/stratamem/strata", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return bi
	}
	if info.Main.Path != "" {
		bi.Module = info.Main.Path
	}
	if info.Main.Version != "" {
		bi.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Revision = s.Value
		case "vcs.time":
			bi.Time = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		}
	}
	return bi
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print memctl's module version",
		Long: `Print the version of the strata module memctl was built from (a release tag,
or "(devel)" for a build in a checkout, with its VCS revision), and the Go
version and platform.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			bi := readBuildInfo()
			if a.flags.json {
				return writeJSON(a.io.Out, bi)
			}
			rev := ""
			if bi.Revision != "" {
				rev = " " + bi.Revision[:min(12, len(bi.Revision))]
				if bi.Modified {
					rev += "+modified"
				}
			}
			fmt.Fprintf(a.io.Out, "memctl %s%s (%s, %s %s)\n", bi.Version, rev, bi.Module, bi.GoVersion, bi.Platform)
			return nil
		},
	}
}
