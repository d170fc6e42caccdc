package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// refFlags complete to the git refs (tags, branches) of the command's tree: the flag
// names a revision there.
var refFlags = map[string]string{"rebase": "onto", "check": "upstream"}

const (
	// refCompletionLimit bounds what a completion offers (PyTorch has hundreds of tags).
	refCompletionLimit = 200
	// refCompletionTimeout bounds how long a TAB waits for git.
	refCompletionTimeout = 2 * time.Second
)

// wireRefCompletion offers the refs of the tree's repository (--tree, else the positional
// tree, else the current directory) for the flags in refFlags. Completion never fails
// loudly: no git, no repository, or a slow one offers nothing.
func wireRefCompletion(root *cobra.Command) {
	for _, c := range root.Commands() {
		flag, ok := refFlags[c.Name()]
		if !ok || c.Flags().Lookup(flag) == nil {
			continue
		}
		_ = c.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			tree := "."
			if f := cmd.Flags().Lookup("tree"); f != nil && f.Value.String() != "" {
				tree = f.Value.String()
			} else if len(args) > 0 {
				tree = args[0]
			}
			ctx, cancel := context.WithTimeout(context.Background(), refCompletionTimeout)
			defer cancel()
			names, err := (&gitcli.Git{}).RefNames(ctx, tree, toComplete, refCompletionLimit)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// completionExamples are the install lines for each shell, shown by `completion --help`
// and each shell's own help.
var completionExamples = map[string]string{
	"bash": `  # now, in this shell (needs the bash-completion package)
  source <(mpspatch completion bash)
  # every new shell
  mpspatch completion bash > ~/.local/share/bash-completion/completions/mpspatch`,
	"zsh": `  # every new shell (compinit must be on: autoload -U compinit; compinit)
  mpspatch completion zsh > "${fpath[1]}/_mpspatch"`,
	"fish": `  mpspatch completion fish > ~/.config/fish/completions/mpspatch.fish`,
	"powershell": `  # now, in this session
  mpspatch completion powershell | Out-String | Invoke-Expression
  # every session: add that line to $PROFILE`,
}

// addCompletionExamples gives the completion command and its per-shell commands their
// Example text (cobra's own have none).
func addCompletionExamples(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var all []string
		for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
			all = append(all, "  # "+shell+"\n"+completionExamples[shell])
		}
		c.Example = strings.Join(all, "\n\n")
		for _, sub := range c.Commands() {
			if ex, ok := completionExamples[sub.Name()]; ok {
				sub.Example = ex
			}
		}
	}
}
