package cli

import (
	"fmt"
	"io"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/config"
	"github.com/mpspatch/mpspatch/internal/redact"
)

type configOptions struct {
	showDefault bool
}

func newConfigCmd(d *deps) *cobra.Command {
	opts := &configOptions{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective configuration",
		Long: `Show the configuration mpspatch would use: --config FILE, else ./mpspatch.toml,
else the built-in defaults. --default prints the commented default file, a good start
for your own mpspatch.toml. Credentials in URLs (https://user:token@host) show as ***.`,
		Example: `  mpspatch config --default > mpspatch.toml
  mpspatch config --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConfig(d, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.showDefault, "default", false, "print the commented default configuration")
	return cmd
}

func runConfig(d *deps, opts *configOptions) error {
	p := d.printer()
	if opts.showDefault && !p.json {
		_, err := p.out.Write(config.DefaultTOML())
		return err
	}
	c := config.Default()
	if !opts.showDefault {
		var err error
		if c, err = d.config(); err != nil {
			return err
		}
	}
	src := c.Path
	if src == "" {
		src = "built-in defaults"
	}
	// Shown, pasted into bug reports and CI logs: the URLs without their credentials (the
	// printer redacts every URL it writes; these two are redacted as URLs, which also
	// catches user:password@host:path).
	c.Upstream.URL = redact.URL(c.Upstream.URL)
	c.Build.Cache.Remote = redact.URL(c.Build.Cache.Remote)
	body, err := toml.Marshal(c)
	if err != nil {
		return fmt.Errorf("config: encode: %w", err)
	}
	doc, err := configJSON(body, src)
	if err != nil {
		return err
	}
	return p.Result(doc, func(w io.Writer) {
		io.WriteString(w, "# source: "+src+"\n")
		w.Write(body)
	})
}

// configJSON is the --json form of a configuration: the same keys as the TOML file
// (upstream.url, verify.report_dir, ...), so one name works in both, plus "source". It is
// decoded from the TOML encoding rather than tagged twice, so the two cannot drift.
func configJSON(body []byte, source string) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("config: re-read the encoded configuration: %w", err)
	}
	doc["source"] = source
	return doc, nil
}
