package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/stack"
)

// Helpers shared by the patch-author commands (apply --commit, export, import, rebase).

// authorGit is the git the author commands run: the user's, in the user's environment
// (export pins every setting that changes its output itself).
func authorGit() *gitcli.Git { return &gitcli.Git{} }

// requireCheckout refuses, as a usage error, a tree that is not a git checkout: the author
// commands work on commits, and git's own "not a git repository" deep in a failed
// rev-list says neither what was expected nor how to get it.
func requireCheckout(ctx context.Context, tree, verb string) error {
	if _, err := authorGit().HeadCommit(ctx, tree); errors.Is(err, gitcli.ErrNotRepository) {
		return usageErrorf("%s: %s is not a git checkout; %s works on the series as commits, which "+
			"`mpspatch apply --commit` makes in a clone (`mpspatch clone --dir DIR --full`)", verb, tree, verb)
	}
	return nil
}

// seriesDirFor says which series directory an author command writes: --patches, else
// the config's patches.dir. The embedded series cannot be written.
func (d *deps) seriesDirFor(o *treeOptions, verb string) (string, error) {
	if o.patches != "" {
		return o.patches, nil
	}
	cfg, err := d.config()
	if err != nil {
		return "", err
	}
	dir := cfg.Patches.Dir
	if dir == "" {
		return "", usageErrorf("%s: name the series directory with --patches (or patches.dir in the config); the series built into mpspatch cannot be written", verb)
	}
	if cfg.Path != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(cfg.Path), dir)
	}
	return dir, nil
}

// pinnedBase is the commit the series is written against: --base, else the config's
// upstream.commit.
func (d *deps) pinnedBase(base string) (string, error) {
	if base != "" {
		return base, nil
	}
	cfg, err := d.config()
	if err != nil {
		return "", err
	}
	if cfg.Upstream.Commit == "" {
		return "", usageErrorf("no base commit: give --base REV or set upstream.commit in the config")
	}
	return cfg.Upstream.Commit, nil
}

// intentChecker judges a patch's intents with metalcheck, for the rebase: the same
// evaluation apply and check use, reduced to the ones that fail.
func intentChecker(p *series.Patch, read func(string) ([]byte, error)) []string {
	var broken []string
	for _, r := range evaluatePatchIntents(p, read) {
		if !r.OK {
			broken = append(broken, r.Intent)
		}
	}
	return broken
}

// loadFormatPatchDir reads a plain `git format-patch` directory (no series file) as
// import would normalise it, warning about each normalisation unless -q. A mail that cannot be
// read or normalised is a lint problem naming it.
func (d *deps) loadFormatPatchDir(ctx context.Context, pd *series.PatchDir, warn func(string, ...any)) (*series.Series, error) {
	fsys, warnings, err := stack.NormalisedView(ctx, pd)
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	if err != nil {
		prob := series.Problem{File: pd.Name(), Msg: err.Error()}
		var ie *series.InputError
		if errors.As(err, &ie) {
			prob = series.Problem{File: ie.Path, Msg: ie.Err.Error()}
		}
		prob.Msg = "read as git format-patch output (there is no series file): " + prob.Msg
		return nil, &series.LintError{Source: pd.Name(), Problems: []series.Problem{prob}}
	}
	s, err := series.LoadContext(ctx, fsys, ".", pd.Name())
	if err != nil {
		return nil, err
	}
	if d.global.quiet {
		// Reading a format-patch directory as import would is routine, and every command
		// on it said so again: -q leaves the notes out (`mpspatch import` writes them down).
		return s, nil
	}
	for _, w := range warnings {
		warn("%s", w)
	}
	return s, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
