package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/builder"
	"github.com/mpspatch/mpspatch/internal/gitcli"
)

type cloneOptions struct {
	dir  string
	full bool
	jobs int
}

func newCloneCmd(d *deps) *cobra.Command {
	opts := &cloneOptions{}
	cmd := &cobra.Command{
		Use:   "clone",
		Short: "Check out the pinned upstream PyTorch commit with its submodules",
		Long: `Clone [upstream] url at [upstream] commit into --dir, detached, with every submodule
at the commit the tree pins. Only that commit is fetched (--depth 1, submodules too)
unless --full asks for its whole history, which a rebase of the series needs.

The directory must not exist or be empty (else exit 2). git must be installed (else
exit 5). Progress goes to stderr; git's whole output to <log_dir>/clone-<timestamp>.log
inside the new tree. The log directory and the build's provenance stamp are added to
.git/info/exclude, so they never make the tree look modified.`,
		Example: `  mpspatch clone --dir ~/src/pytorch
  mpspatch clone --dir pytorch --full   # whole history, for rebasing the series`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClone(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "pytorch", "directory to clone into (must not exist, or be empty)")
	f.BoolVar(&opts.full, "full", false, "fetch the commit's whole history, not only the commit")
	f.IntVarP(&opts.jobs, "jobs", "j", 8, "submodules fetched at once")
	return cmd
}

// cloneReport is the result of `mpspatch clone`.
type cloneReport struct {
	Dir     string  `json:"dir"`
	URL     string  `json:"url"`
	Commit  string  `json:"commit"`
	Tag     string  `json:"tag,omitempty"`
	Full    bool    `json:"full"`
	Log     string  `json:"log"`
	Seconds float64 `json:"seconds"`
}

func runClone(ctx context.Context, d *deps, opts *cloneOptions) error {
	p := d.printer()
	cfg, err := d.config()
	if err != nil {
		return err
	}
	if opts.jobs < 1 {
		return usageErrorf("--jobs %d: want at least 1", opts.jobs)
	}
	dir, err := filepath.Abs(opts.dir)
	if err != nil {
		return usageErrorf("--dir %s: %v", opts.dir, err)
	}
	if err := checkEmptyDir(dir); err != nil {
		return withCode(ExitUsage, err)
	}

	g := &gitcli.Git{}
	v, err := g.Version(ctx)
	if err != nil {
		return gitError(err)
	}

	logDir := cfg.Build.LogDir
	if logDir == "" {
		logDir = filepath.Join(".mpspatch", "logs")
	}
	var exclude []string
	if !filepath.IsAbs(logDir) {
		exclude = append(exclude, "/"+filepath.ToSlash(filepath.Clean(logDir))+"/")
		logDir = filepath.Join(dir, logDir)
	}
	exclude = append(exclude, "/.mpspatch/", "/"+builder.ProvenanceFile)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("clone: create log directory: %w", err)
	}
	started := time.Now()
	g.LogPath = filepath.Join(logDir, "clone-"+started.UTC().Format("20060102T150405Z")+".log")

	what := "the commit"
	if opts.full {
		what = "its whole history"
	}
	p.Progressf("clone: %s at %s (%s) into %s, %s (git %s; log %s)",
		cfg.Upstream.URL, cfg.Upstream.Commit, cfg.Upstream.Tag, dir, what, v, g.LogPath)
	bar := newProgressLine(p, d.io.ErrTTY)
	err = g.Clone(ctx, cfg.Upstream.URL, dir, cfg.Upstream.Commit, gitcli.CloneOptions{
		Full: opts.full, Jobs: opts.jobs, Exclude: exclude,
		Progress: func(step, line string) {
			bar.update(cloneProgressKey(step, line), "clone: "+step+": "+line, false)
		},
	})
	bar.finish()
	if err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("%w\nthe partial clone in %s must be removed before trying again", err, dir)
		}
		return gitError(err)
	}
	rep := cloneReport{Dir: dir, URL: cfg.Upstream.URL, Commit: cfg.Upstream.Commit, Tag: cfg.Upstream.Tag,
		Full: opts.full, Log: g.LogPath, Seconds: time.Since(started).Seconds()}
	return p.Result(rep, func(w io.Writer) {
		ref := rep.Commit
		if rep.Tag != "" {
			ref = rep.Tag + " (" + rep.Commit + ")"
		}
		fmt.Fprintf(w, "%s %s at %s into %s\n", p.Paint(green, "cloned"), rep.URL, ref, rep.Dir)
		fmt.Fprintf(w, "  log: %s\n", rep.Log)
	})
}

// gitError maps git failures: no git is an unsupported environment (exit 5); a failed
// git command keeps the default failure code with git's message and the log.
func gitError(err error) error {
	var nf *gitcli.NotFoundError
	if errors.As(err, &nf) {
		return withCode(ExitUnsupported, err)
	}
	return err
}

// checkEmptyDir accepts a path that does not exist or is an empty directory (apart from
// mpspatch's own state directory).
func checkEmptyDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("clone into %s: it exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clone into %s: %w", dir, err)
	}
	for _, e := range entries {
		// mpspatch's own state (the logs of `mpspatch run`, which starts logging before
		// the clone exists) does not make a directory "not empty".
		if e.Name() == ".mpspatch" && e.IsDir() {
			continue
		}
		return fmt.Errorf("clone into %s: the directory is not empty (holds %s); choose another --dir or remove it", dir, e.Name())
	}
	return nil
}

var percentRE = regexp.MustCompile(`(\d{1,3})%`)

// cloneProgressKey changes when a plain log should get a new line: a new step, a new
// kind of git message ("Receiving objects", "Resolving deltas", a submodule's "Cloning
// into"), or another 10% of one.
func cloneProgressKey(step, line string) string {
	kind, _, _ := strings.Cut(line, ":")
	if m := percentRE.FindStringSubmatch(line); m != nil {
		n := 0
		fmt.Sscan(m[1], &n)
		return fmt.Sprintf("%s|%s|%d", step, kind, n/10)
	}
	return step + "|" + line
}
