package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/builder"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

type cloneOptions struct {
	dir    string
	full   bool
	filter string
	jobs   int
}

func newCloneCmd(d *deps) *cobra.Command {
	opts := &cloneOptions{}
	cmd := &cobra.Command{
		Use:   "clone",
		Short: "Check out the pinned upstream PyTorch commit with its submodules",
		Long: `Clone [upstream] url at [upstream] commit into --dir, detached, with every submodule
at the commit the tree pins. Only that commit is fetched (--depth 1, submodules too)
unless --full asks for its whole history, which a rebase of the series needs.

Before anything is fetched, [upstream] tag is looked up upstream (git ls-remote): if it
no longer names [upstream] commit, the clone is refused naming both commits (exit 1).
--full history is a partial clone (--filter=blob:none): commits and trees only, file
contents fetched when a checkout or a three-way merge first needs them (--filter none
fetches everything).

The directory must not exist or be empty (else exit 2). Running clone again on a
finished clone at the pinned commit does nothing and says so. A clone interrupted at any
point (killed, Ctrl-C, power or network lost) is recognised by the authenticated marker
it keeps in .git from before git init, and resumed by running the same command again:
git processes the killed clone left running are stopped, and the lock files they left
removed. A marker that this user's mpspatch did not write for this directory is refused
(exit 2) and nothing there is touched. git must be installed (else exit 5).

URLs may be https://, ssh://, git://, file:// or user@host:path. Credentials in an
https URL (https://user:token@host/...) are handed to git in its environment, never on a
command line, and never appear in output, logs or the clone's .git/config. A password in
any other URL is refused (exit 2): git would hand it to ssh as part of the login name.

Progress goes to stderr: a redrawn bar per phase on a terminal; otherwise (a CI log, a
pipe) two plain lines per phase of git's, when it starts and when it is done, and one
every 30 s in a phase that runs long. git's whole output goes to
<log_dir>/clone-<timestamp>.log inside the new tree. The log
directory and the build's provenance stamp are added to .git/info/exclude, so they never
make the tree look modified.`,
		Example: `  mpspatch clone --dir ~/src/pytorch
  mpspatch clone --dir pytorch --full   # whole history (blobless), for rebasing the series`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClone(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "pytorch", "directory to clone into (must not exist, or be empty)")
	f.BoolVar(&opts.full, "full", false, "fetch the commit's whole history, not only the commit")
	f.StringVar(&opts.filter, "filter", defaultCloneFilter, "partial-clone filter: auto (blob:none with --full), none, or a git filter spec")
	f.IntVarP(&opts.jobs, "jobs", "j", defaultCloneJobs, "submodules fetched at once")
	return cmd
}

// The defaults of clone's flags, which `mpspatch run` clones with too.
const (
	defaultCloneFilter = "auto"
	defaultCloneJobs   = 8
)

// cloneReport is the result of `mpspatch clone`.
type cloneReport struct {
	// Noop is set when the directory already held the finished clone.
	Noop bool `json:"noop,omitempty"`
	// Resumed is set when an interrupted clone was carried on.
	Resumed bool    `json:"resumed,omitempty"`
	Filter  string  `json:"filter,omitempty"`
	Dir     string  `json:"dir"`
	URL     string  `json:"url"`
	Commit  string  `json:"commit"`
	Tag     string  `json:"tag,omitempty"`
	Full    bool    `json:"full"`
	Log     string  `json:"log"`
	Seconds float64 `json:"seconds"`
}

func runClone(ctx context.Context, d *deps, opts *cloneOptions) error {
	rep, err := clone(ctx, d, opts)
	if err != nil {
		return err
	}
	return writeClone(d.printer(), rep)
}

// writeClone renders clone's result on stdout: the report under --json, a line or two
// otherwise.
func writeClone(p *printer, rep *cloneReport) error {
	return p.Result(rep, func(w io.Writer) {
		if rep.Noop {
			fmt.Fprintf(w, "%s is already a finished clone of %s at %s; nothing to do\n", rep.Dir, rep.URL, refName(*rep))
			return
		}
		verb := "cloned"
		if rep.Resumed {
			verb = "cloned (resumed)"
		}
		fmt.Fprintf(w, "%s %s at %s into %s\n", p.Paint(green, verb), rep.URL, refName(*rep), rep.Dir)
		fmt.Fprintf(w, "  log: %s\n", rep.Log)
	})
}

// clone does the work of `mpspatch clone`, with its progress on d's stderr, and returns
// what it did; writeClone shows it.
func clone(ctx context.Context, d *deps, opts *cloneOptions) (*cloneReport, error) {
	p := d.printer()
	cfg, err := d.config()
	if err != nil {
		return nil, err
	}
	if opts.jobs < 1 {
		return nil, usageErrorf("--jobs %d: want at least 1", opts.jobs)
	}
	dir, err := filepath.Abs(opts.dir)
	if err != nil {
		return nil, usageErrorf("--dir %s: %v", opts.dir, err)
	}
	filter := opts.filter
	switch filter {
	case "auto":
		filter = ""
		if opts.full {
			filter = "blob:none"
		}
	case "none":
		filter = ""
	}
	up := cfg.Upstream
	if err := gitcli.CheckURL(up.URL); err != nil {
		return nil, withCode(ExitUsage, err)
	}
	shown := gitcli.RedactURL(up.URL)

	g := &gitcli.Git{}
	v, err := g.Version(ctx)
	if err != nil {
		return nil, gitError(err)
	}
	g, url := g.WithCredentials(up.URL)

	resumed, err := gitcli.InterruptedClone(dir)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if !resumed {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return cloneNoop(ctx, g, dir, up.Commit, &cloneReport{Dir: dir, URL: shown, Commit: up.Commit, Tag: up.Tag, Full: opts.full})
		}
		if err := checkEmptyDir(dir); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	if up.Tag != "" {
		if err := verifyTag(ctx, g, url, shown, up.Tag, up.Commit); err != nil {
			return nil, err
		}
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
		return nil, fmt.Errorf("clone: create log directory: %w", err)
	}
	started := time.Now()
	g.LogPath = filepath.Join(logDir, "clone-"+started.UTC().Format("20060102T150405Z")+".log")

	what := "the commit"
	if opts.full {
		what = "its whole history"
	}
	if filter != "" {
		what += " (--filter=" + filter + ")"
	}
	if resumed {
		p.Progressf("clone: %s holds a clone that did not finish (interrupted); resuming it", dir)
	}
	p.Progressf("clone: %s at %s (%s) into %s, %s (git %s; log %s)",
		shown, up.Commit, up.Tag, dir, what, v, g.LogPath)
	bar := newProgressLine(p, d.io.ErrTTY)
	err = g.Clone(ctx, url, dir, up.Commit, gitcli.CloneOptions{
		Full: opts.full, Filter: filter, Jobs: opts.jobs, Exclude: exclude,
		Progress: func(step, line string) {
			bar.update(cloneProgressKey(step, line), cloneProgressText(step, line, d.io.ErrTTY), false)
		},
	})
	bar.finish()
	if err != nil {
		err = gitError(err)
		if ctx.Err() == nil {
			err = fmt.Errorf("%w\nthe unfinished clone in %s is kept: run the same command again to resume it (or remove the directory to start over)", err, dir)
		}
		return nil, err
	}
	return &cloneReport{Dir: dir, URL: shown, Commit: up.Commit, Tag: up.Tag, Resumed: resumed,
		Full: opts.full, Filter: filter, Log: g.LogPath, Seconds: time.Since(started).Seconds()}, nil
}

func refName(rep cloneReport) string {
	if rep.Tag != "" {
		return rep.Tag + " (" + rep.Commit + ")"
	}
	return rep.Commit
}

// cloneNoop handles a directory that already holds a finished clone: at the pinned
// commit it is a no-op that says so; at another commit it is refused.
func cloneNoop(ctx context.Context, g *gitcli.Git, dir, commit string, rep *cloneReport) (*cloneReport, error) {
	head, err := g.HeadCommit(ctx, dir)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("clone into %s: it holds a git repository whose HEAD cannot be read: %w", dir, err))
	}
	if head != commit {
		return nil, withCode(ExitUsage, fmt.Errorf("clone into %s: it already holds a clone at %s, not the pinned %s; choose another --dir or remove it", dir, head, commit))
	}
	rep.Noop = true
	return rep, nil
}

// verifyTag refuses to clone when the configured tag no longer names the pinned commit
// upstream (a re-tagged release), or is gone.
func verifyTag(ctx context.Context, g *gitcli.Git, url, shown, tag, commit string) error {
	refs, err := g.LsRemote(ctx, url, "refs/tags/"+tag, "refs/tags/"+tag+"^{}")
	if err != nil {
		return gitError(fmt.Errorf("clone: verify tag %s: %w", tag, err))
	}
	var direct, peeled string
	for _, r := range refs {
		switch r.Name {
		case "refs/tags/" + tag:
			direct = r.SHA
		case "refs/tags/" + tag + "^{}":
			peeled = r.SHA
		}
	}
	have := peeled
	if have == "" {
		have = direct
	}
	switch {
	case have == "":
		return withCode(ExitCheckFailed, fmt.Errorf("clone: tag %s does not exist at %s; the config pins it at %s (fix [upstream] tag, or empty it to clone by commit alone)", tag, shown, commit))
	case have != commit:
		return withCode(ExitCheckFailed, fmt.Errorf("clone: tag %s at %s points at %s, but the config pins %s: upstream moved the tag; refusing to clone (check the release, then update [upstream] commit)", tag, shown, have, commit))
	}
	return nil
}

// gitError maps git failures: no git is an unsupported environment (exit 5); a failed
// git command becomes describeGitFailure's sentence, exit code and log.
func gitError(err error) error {
	var nf *gitcli.NotFoundError
	if errors.As(err, &nf) {
		return withCode(ExitUnsupported, err)
	}
	return describeGitFailure(err)
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
		// the clone exists), and the .git a clone killed at its very start was making,
		// do not make a directory "not empty".
		if (e.Name() == ".mpspatch" || e.Name() == gitcli.CloneStage) && e.IsDir() {
			continue
		}
		return fmt.Errorf("clone into %s: the directory is not empty (holds %s); choose another --dir or remove it", dir, e.Name())
	}
	return nil
}

var percentRE = lazyregexp.New(`(\d{1,3})%`)

// cloneProgressText is what a progress line shows. On a terminal a git line with a
// percentage becomes a bar, redrawn in place: "clone: fetch: Receiving objects
// [=========>          ] 45% (450/1000), 1.20 MiB | 3.00 MiB/s". Elsewhere it is git's
// own line, prefixed, which reads well in a CI log.
func cloneProgressText(step, line string, tty bool) string {
	m := percentRE().FindStringSubmatchIndex(line)
	if !tty || m == nil {
		return "clone: " + step + ": " + line
	}
	n := 0
	fmt.Sscan(line[m[2]:m[3]], &n)
	n = min(n, 100)
	const width = 20
	fill := n * width / 100
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	phase := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line[:m[0]]), ":"))
	rest := strings.TrimSpace(line[m[1]:])
	return fmt.Sprintf("clone: %s: %s [%s] %3d%% %s", step, phase, bar, n, rest)
}

// cloneProgressKey changes when a plain log should get a new line: a new step, a new
// phase of git's ("Receiving objects", "remote: Counting objects", a submodule's "Cloning
// into"), and the phase's end (100%, or git's ", done."). So a CI log gets two lines a
// phase, start and end, instead of one per update git redraws (a count without a
// percentage, "Enumerating objects: 1234", changed the key at every update); a phase that
// runs long adds one line every plainEvery. On a terminal the key only paces redrawing.
func cloneProgressKey(step, line string) string {
	if m := percentRE().FindStringSubmatchIndex(line); m != nil {
		n := 0
		fmt.Sscan(line[m[2]:m[3]], &n)
		return fmt.Sprintf("%s|%s|%v", step, strings.TrimSpace(line[:m[0]]), n >= 100)
	}
	return step + "|" + digitsRE().ReplaceAllString(line, "#")
}

var digitsRE = lazyregexp.New(`[0-9]+`)
