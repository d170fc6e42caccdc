package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/config"
	"github.com/mpspatch/mpspatch/internal/run"
)

// globalOptions are the persistent flags every command sees.
type globalOptions struct {
	configPath string
	json       bool
	quiet      bool
	verbose    bool
	// chdir holds each -C DIR in order, as git applies them (see changeDir).
	chdir []string
	// color is --color: auto, always or never (see IOStreams.colorOn).
	color string
}

// deps is what every command constructor receives: the streams and the global options,
// plus lazily loaded shared state. Tests build it through Main with their own streams.
type deps struct {
	io     IOStreams
	global *globalOptions
	// sink holds the --json result until the command returns (see printer.Result).
	sink *resultSink
	// safeOut is stdout's filter under d.io.Out (see safeWriter); nil outside Main.
	safeOut *safeWriter
	// safeErr is stderr's filter under d.io.Err; nil outside Main.
	safeErr *safeWriter
	// startDir is where the process was before -C moved it; "" when it did not.
	startDir string
	// helpOut receives cobra's help and usage, mpspatch's own text; nil means d.io.Out.
	helpOut io.Writer
	// args are the command line's words after the program name, for -v.
	args []string
}

func (d *deps) printer() *printer {
	p := newPrinter(d.io, d.global.json, d.global.quiet)
	p.sink = d.sink
	p.safe = d.safeOut
	return p
}

// config returns --config, else ./mpspatch.toml when present, else the embedded default.
func (d *deps) config() (config.Config, error) {
	if d.global.configPath != "" {
		c, err := config.Load(d.global.configPath)
		return c, withCode(ExitUsage, err)
	}
	if _, err := os.Stat("mpspatch.toml"); err == nil {
		c, err := config.Load("mpspatch.toml")
		return c, withCode(ExitUsage, err)
	}
	return config.Default(), nil
}

const exitCodeHelp = `Exit codes:
  0    ok
  1    checks failed (lint, verify, audit)
  2    usage or config error
  3    patch conflict (apply: nothing was written; rebase: stopped, state saved for --continue, --skip or --abort)
  4    build failed
  5    environment unsupported (no Metal, no python, no git)
  130  interrupted`

// The root's persistent hook (-v) must run even under a command group that has its own.
// Set once here, not per Main, as tests run Main concurrently.
func init() { cobra.EnableTraverseRunHooks = true }

// commandNames are the top-level commands, by the name cobra finds them under (none has
// an alias); newCommand builds one.
var commandNames = []string{"apply", "unapply", "check", "status", "version", "config", "verify",
	"audit", "probe", "clone", "build", "run", "upstream", "cache", "export", "import", "rebase"}

func newCommand(d *deps, name string) *cobra.Command {
	switch name {
	case "apply":
		return newApplyCmd(d, nil)
	case "unapply":
		return newUnapplyCmd(d)
	case "check":
		return newCheckCmd(d)
	case "status":
		return newStatusCmd(d)
	case "version":
		return newVersionCmd(d)
	case "config":
		return newConfigCmd(d)
	case "verify":
		return newVerifyCmd(d)
	case "audit":
		return newAuditCmd(d)
	case "probe":
		return newProbeCmd(d)
	case "clone":
		return newCloneCmd(d)
	case "build":
		return newBuildCmd(d)
	case "run":
		return newRunCmd(d, nil)
	case "upstream":
		return newUpstreamCmd(d)
	case "cache":
		return newCacheCmd(d)
	case "export":
		return newExportCmd(d)
	case "import":
		return newImportCmd(d)
	case "rebase":
		return newRebaseCmd(d)
	}
	panic("mpspatch: no command " + name)
}

// commandToRun names the top-level command args run, when that is plain from the words
// alone: the first word that is not one of the root's own flags, where it names a command.
// Main then builds only that command (with its subcommands), as every command otherwise
// paid, at each start, for building the seventeen it does not run. Anything less plain
// (an unknown or combined flag first, help, completion, a mistyped name cobra would
// suggest a correction for) gives "", and the whole tree.
func commandToRun(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--config", a == "-C", a == "--color":
			i++ // its value
		case strings.HasPrefix(a, "--config="), strings.HasPrefix(a, "--color="), a == "--json", a == "-q", a == "--quiet", a == "-v", a == "--verbose":
		case strings.HasPrefix(a, "-"):
			return ""
		default:
			if slices.Contains(commandNames, a) {
				return a
			}
			return ""
		}
	}
	return ""
}

// newRootCmd builds the root command with every command under it, or, when only names
// one, with that one alone (see commandToRun).
func newRootCmd(d *deps, only string) *cobra.Command {
	root := &cobra.Command{
		Use:   "mpspatch",
		Short: "Keep the PyTorch MPS thread-safety patch series alive",
		Long: `mpspatch applies a numbered series of thread-safety patches to a PyTorch checkout,
builds it, and verifies that concurrent MPS inference works: a static audit of the MPS
sources, a runtime Metal probe, and Python concurrency suites.

The series is embedded in the binary; --patches DIR uses a directory instead.

` + exitCodeHelp,
		Example: `  mpspatch check                       # lint the embedded series
  mpspatch apply --tree ~/src/pytorch   # apply it to a checkout
  mpspatch status ~/src/pytorch         # which patches are applied (the tree as an argument)
  mpspatch -C ~/src/pytorch/aten status # -C DIR: as if started there; the tree is found upward
  mpspatch --color=always status | less -R
  mpspatch -v build ~/src/pytorch       # show the environment and every command run
  mpspatch verify --json | jq -c 'select(.type == "summary")'`,
		Version:       currentVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if d.safeOut != nil {
				d.safeOut.setJSON(d.global.json)
			}
			if err := d.applyColor(); err != nil {
				return err
			}
			// -C first: every relative path of the command (flags, arguments, the
			// config's own lookup) is then relative to DIR, as under git -C.
			if err := d.changeDir(d.global.chdir); err != nil {
				return err
			}
			if d.global.verbose {
				d.traceEnvironment(cmd)
				cmd.SetContext(run.WithTracer(cmd.Context(), d.traceCommand))
			}
			return nil
		},
	}
	root.SetVersionTemplate("mpspatch {{.Version}}\n")
	if d.helpOut != nil {
		root.SetOut(d.helpOut)
	} else {
		root.SetOut(d.io.Out)
	}
	root.SetErr(d.io.Err)
	root.SetIn(d.io.In)
	pf := root.PersistentFlags()
	pf.StringArrayVarP(&d.global.chdir, "chdir", "C", nil, "run as if mpspatch was started in `DIR` (as git -C: repeatable, each relative to the one before; relative paths in other flags are relative to DIR)")
	pf.StringVar(&d.global.color, "color", "auto", "colour the output: auto (a terminal; NO_COLOR turns it off, CLICOLOR_FORCE or FORCE_COLOR on), always or never; the flag wins over the environment")
	pf.StringVar(&d.global.configPath, "config", "", "config file (default: ./mpspatch.toml when present, else built-in defaults)")
	pf.BoolVar(&d.global.json, "json", false, "write results as JSON on stdout")
	pf.BoolVarP(&d.global.quiet, "quiet", "q", false, "no progress on stderr, nor the notes on reading a format-patch directory")
	pf.BoolVarP(&d.global.verbose, "verbose", "v", false, "print the effective environment and every command mpspatch runs on stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return withCode(ExitUsage, err)
	})

	if only != "" {
		root.AddCommand(newCommand(d, only))
		// The default completion command is only needed when it is the one being run,
		// and then the whole tree is built (only is empty).
		root.CompletionOptions.DisableDefaultCmd = true
	} else {
		for _, name := range commandNames {
			root.AddCommand(newCommand(d, name))
		}
		// Made now rather than by cobra at Execute, so that it gets its examples.
		root.InitDefaultCompletionCmd()
	}
	wireCompletionAndPaths(root, d.io.getenv)
	return root
}

// outputFormat resolves a command's --format flag: the value given, else json under
// --json, else text; anything outside allowed is a usage error naming the choices.
func (d *deps) outputFormat(flag string, allowed []resultFormat) (resultFormat, error) {
	switch {
	case flag == "" && d.global.json:
		return parseFormat(string(formatJSON), allowed)
	case flag == "":
		return parseFormat(string(formatText), allowed)
	}
	format, err := parseFormat(flag, allowed)
	if err != nil {
		return "", err
	}
	if d.global.json && format != formatJSON {
		// One document on stdout: --json's, or the format's, never a silent choice.
		return "", usageErrorf("--format %s and --json conflict: --json writes JSON; drop one of them", format)
	}
	return format, nil
}

// NewRootCommand returns the whole command tree, bound to the process's own streams, for
// tools that document it (internal/docgen); running commands goes through Main.
func NewRootCommand() *cobra.Command {
	root := newRootCmd(&deps{io: System(), global: &globalOptions{}}, "")
	// What cobra adds when a command runs, so the reference shows the same tree.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

// Main runs mpspatch with args (without the program name) and returns the exit code.
//
// Under --json it guarantees one JSON document on stdout whatever happened: the result a
// command left, with an "error" member added when it failed, or {"error": ...} alone when
// it failed before producing one. Commands get this for free by writing through the
// printer.
func Main(ctx context.Context, args []string, stdio IOStreams) int {
	d := &deps{io: stdio, global: &globalOptions{}, sink: &resultSink{}, args: args}
	out := stdio.Out
	// Everything a command writes passes the safe writers (credentials redacted, control
	// characters escaped); the help text is mpspatch's own and goes out as written.
	d.safeOut = newSafeWriter(stdio.Out, stdio.OutTTY, stdio.ColorOut())
	safeErr := newSafeWriter(stdio.Err, stdio.ErrTTY, stdio.ColorErr())
	d.io.Out = d.sink.wrap(d.safeOut)
	d.io.Err = safeErr
	d.safeErr = safeErr
	d.helpOut = d.io.Out
	if !wantsJSON(args) {
		d.helpOut = stdio.Out
	}
	root := newRootCmd(d, commandToRun(args))
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if d.startDir != "" {
		_ = os.Chdir(d.startDir)
	}
	// --json may not have been parsed when an earlier flag was bad: look at the words too.
	jsonOut := d.global.json || wantsJSON(args)
	code := exitCodeOf(err)
	var failure *errorBody
	if err != nil {
		if ctx.Err() != nil {
			code = ExitInterrupted
		}
		msg := err.Error()
		if isCobraUsageError(msg) {
			code = ExitUsage
		}
		failure = newErrorBody(err, code)
		var silent *silentError
		if !errors.As(err, &silent) {
			fmt.Fprintf(safeErr, "mpspatch: %s\n", failure.Message)
			if code == ExitUsage && isCobraUsageError(msg) {
				fmt.Fprintln(safeErr, "Run 'mpspatch --help' for usage.")
			}
		}
	}
	d.safeOut.Flush()
	if jsonOut {
		if werr := d.sink.finish(out, failure); werr != nil {
			fmt.Fprintf(safeErr, "mpspatch: write the JSON result: %v\n", werr)
			if code == ExitOK {
				code = ExitCheckFailed
			}
		}
	}
	safeErr.Flush()
	return code
}

// applyColor validates --color and sets the streams' colour from it (see IOStreams.colorOn).
func (d *deps) applyColor() error {
	switch d.global.color {
	case "auto", "always", "never":
	default:
		return usageErrorf("--color %q: want auto, always or never", d.global.color)
	}
	d.io.colorMode = d.global.color
	if d.safeOut != nil {
		d.safeOut.setColor(d.io.ColorOut())
	}
	if d.safeErr != nil {
		d.safeErr.setColor(d.io.ColorErr())
	}
	return nil
}

// changeDir applies each -C DIR in turn, as git does: a relative DIR is taken from the
// directory the one before it left, and an empty one changes nothing. A DIR that cannot
// be entered is a usage error naming it.
// Main goes back to where it started when it returns (tests run it in their process).
func (d *deps) changeDir(dirs []string) error {
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if d.startDir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return usageErrorf("-C %s: the current directory: %v", dir, err)
			}
			d.startDir = wd
		}
		if err := os.Chdir(dir); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return usageErrorf("-C %s: cannot change to that directory: %v", dir, err)
		}
	}
	return nil
}

// wantsJSON says whether --json is among the words before "--".
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// isCobraUsageError recognises the argument errors cobra produces itself.
func isCobraUsageError(msg string) bool {
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag",
		"accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
