package cli

import (
	"io"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/config"
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
for your own mpspatch.toml.`,
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
	if opts.showDefault {
		_, err := p.out.Write(config.DefaultTOML())
		return err
	}
	c, err := d.config()
	if err != nil {
		return err
	}
	return p.Result(c, func(w io.Writer) {
		src := c.Path
		if src == "" {
			src = "built-in defaults"
		}
		io.WriteString(w, "# source: "+src+"\n")
		b, _ := toml.Marshal(c)
		w.Write(b)
	})
}
