package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/patches"
)

// version is set at link time by the Makefile (-X); "dev" otherwise.
var version = "dev"

// currentVersion is the linked version, else the module version `go install ...@vX`
// recorded in the binary, else "dev".
func currentVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func newVersionCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the mpspatch version and the hash of the built-in series",
		Long: `Print the mpspatch version, the Go toolchain and platform, and the SHA-256 of the
built-in series (the order file and every patch byte): two binaries with the same series
hash apply exactly the same patches.`,
		Example: `  mpspatch version
  mpspatch version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(d)
		},
	}
}

type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
	SeriesHash string `json:"series_hash"`
	Patches    int    `json:"patches"`
	Base       string `json:"base"`
}

func runVersion(d *deps) error {
	p := d.printer()
	info := versionInfo{Version: currentVersion(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Commit = s.Value
			}
		}
	}
	var err error
	info.SeriesHash, info.Patches, err = series.Identity(patches.FS, ".")
	if err != nil {
		return fmt.Errorf("built-in series: %w", err)
	}
	cfg, err := d.config()
	if err != nil {
		return err
	}
	info.Base = cfg.Upstream.Tag + " " + cfg.Upstream.Commit
	return p.Result(info, func(w io.Writer) {
		fmt.Fprintf(w, "mpspatch %s (%s, %s)\n", info.Version, info.Go, info.Platform)
		fmt.Fprintf(w, "series   sha256:%s (%s)\n", info.SeriesHash, plural(info.Patches, "patch"))
		fmt.Fprintf(w, "base     %s\n", info.Base)
	})
}
