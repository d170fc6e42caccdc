package cli

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/redact"
	"github.com/mpspatch/mpspatch/internal/run"
)

// traceEnvironment prints, for --verbose, what decides this run's behaviour: the version,
// the working directory, the configuration file, and the environment variables mpspatch
// and the tools it starts read. Values are printed as they are (they are the user's own),
// but for credentials (redact.EnvVar): -v output ends up in CI logs, and the variable
// [build.cache] password_env names is often MPSPATCH_something.
func (d *deps) traceEnvironment(cmd *cobra.Command) {
	w := d.io.Err
	fmt.Fprintf(w, "mpspatch: version %s (%s, %s/%s)\n", currentVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	// The whole command line, as a shell would re-run it; a credential in a URL argument
	// (--url https://user:token@host/...) is masked.
	line := cmd.Root().Name()
	if len(d.args) > 0 {
		line += " " + run.QuoteArgv(d.args)
	}
	fmt.Fprintf(w, "mpspatch: command %s\n", redact.Text(line))
	if wd, err := os.Getwd(); err == nil {
		fmt.Fprintf(w, "mpspatch: working directory %s\n", wd)
	}
	cfg, err := d.config()
	switch {
	case err != nil:
		fmt.Fprintf(w, "mpspatch: config: %v\n", err)
	case cfg.Path == "":
		fmt.Fprintln(w, "mpspatch: config: built-in defaults")
	default:
		fmt.Fprintf(w, "mpspatch: config: %s\n", cfg.Path)
	}
	for _, kv := range tracedEnv(os.Environ()) {
		if pw := cfg.Build.Cache.PasswordEnv; pw != "" && strings.HasPrefix(kv, pw+"=") {
			kv = pw + "=" + redact.Mask // whatever its name, it holds the cache's password
		}
		fmt.Fprintf(w, "mpspatch: env %s\n", redact.EnvVar(kv))
	}
}

// tracedEnv picks the variables that change what mpspatch or its children do, sorted.
func tracedEnv(environ []string) []string {
	prefixes := []string{"MPSPATCH_", "PYTORCH_", "TORCH_", "USE_", "CMAKE_", "MAX_JOBS=", "CC=", "CXX=",
		"PATH=", "VIRTUAL_ENV=", "CONDA_PREFIX=", "PYTHONPATH=", "NO_COLOR=", "CLICOLOR_FORCE=", "FORCE_COLOR=", "CI=", "GIT_", "HOME="}
	var out []string
	for _, kv := range environ {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				out = append(out, kv)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// traceCommand prints, for --verbose, every process mpspatch starts (a run.Tracer).
func (d *deps) traceCommand(argv []string, dir string) {
	if dir == "" {
		dir = "."
	}
	parts := make([]string, len(argv))
	for i, a := range argv {
		if strings.Contains(a, "\n") {
			parts[i] = run.DisplayArgv([]string{a}) // an inline script: its log has it whole
		} else {
			parts[i] = run.QuoteArgv([]string{a})
		}
	}
	fmt.Fprintf(d.io.Err, "mpspatch: run (in %s) %s\n", dir, strings.Join(parts, " "))
}
