package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/suiteparam"
)

// flagValues are the values shell completion offers for a flag, by flag name, or by
// "command flag" where the values depend on the command. They mirror what the commands
// and the config accept (TestFlagCompletion runs each through its command).
var flagValues = map[string][]string{
	"device":       suiteparam.Names(suiteparam.Devices()),
	"profile":      suiteparam.Names(suiteparam.Profiles()),
	"audit format": formatNames(auditFormats),
	"run format":   formatNames(runFormats),
	"check format": formatNames(checkFormats),
	"run from":     runStages,
	"run until":    runStages,
}

// dirFlags complete to directories, fileFlags to files with these extensions.
var (
	dirFlags  = []string{"tree", "dir", "patches", "report-dir", "suites-dir", "log-dir"}
	fileFlags = map[string][]string{"config": {"toml"}, "render": {"jsonl", "json"}, "baseline": {"toml", "txt", "json"}}
)

// pathArgCommands take their tree (or directory) as the one positional argument too, as
// users type it: `mpspatch apply ~/src/pytorch` is `mpspatch apply --tree ~/src/pytorch`.
var pathArgCommands = map[string]string{
	"apply": "tree", "unapply": "tree", "status": "tree", "check": "tree", "build": "tree", "verify": "tree",
	"audit": "tree", "export": "tree", "rebase": "tree",
	"clone": "dir",
}

// wireCompletionAndPaths walks the command tree once, after every command is registered:
// value and directory completion for the flags above, and the positional path argument.
// Doing it here rather than in each command keeps every command's file to its own job, and
// a command added later gets the same behaviour by having a flag of the same name.
// getenv reads the environment of tree discovery (GIT_CEILING_DIRECTORIES).
func wireCompletionAndPaths(root *cobra.Command, getenv func(string) string) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if flag, ok := pathArgCommands[c.Name()]; ok && c.Parent() == root && c.Flags().Lookup(flag) != nil {
			acceptPathArg(c, flag)
		}
		if c.Parent() == root {
			// A command given no tree finds it from here upward, as git (see findTreeTop).
			discoverTree(c, getenv)
		}
		for _, name := range dirFlags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return nil, cobra.ShellCompDirectiveFilterDirs
				})
			}
		}
		for name, exts := range fileFlags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(exts, cobra.ShellCompDirectiveFilterFileExt))
			}
		}
		for key, values := range flagValues {
			name := key
			if cmd, flag, ok := strings.Cut(key, " "); ok {
				if cmd != c.Name() {
					continue
				}
				name = flag
			}
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
	}
	walk(root)
	wireRefCompletion(root)
	addCompletionExamples(root)
}

// acceptPathArg lets c take the value of --flag as its one positional argument, shown in
// its usage line, completed as a directory.
func acceptPathArg(c *cobra.Command, flag string) {
	metavar := strings.ToUpper(flag)
	// The argument goes right after the name, before what the usage line says of flags
	// ("rebase [TREE] --onto REF").
	words := strings.Fields(c.Use)
	c.Use = strings.Join(append([]string{words[0], "[" + metavar + "]"}, words[1:]...), " ")
	c.Args = cobra.MaximumNArgs(1)
	c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			f := cmd.Flags().Lookup(flag)
			if f.Changed && f.Value.String() != args[0] {
				return usageErrorf("%s given twice: --%s %s and %s", metavar, flag, f.Value, args[0])
			}
			if err := cmd.Flags().Set(flag, args[0]); err != nil {
				return withCode(ExitUsage, err)
			}
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}
