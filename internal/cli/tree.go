package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/config"
	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/stack"
	"github.com/mpspatch/mpspatch/patches"
)

// treeOptions are the flags of every command that works on a tree.
type treeOptions struct {
	tree    string
	patches string
}

// treeFlagHelp says what --tree is and where a command given none works.
const treeFlagHelp = "PyTorch checkout to work on (also the argument); with neither, the checkout holding the current directory, found as git finds its top level"

func addTreeFlags(cmd *cobra.Command, o *treeOptions) {
	cmd.Flags().StringVar(&o.tree, "tree", ".", treeFlagHelp)
	addPatchesFlag(cmd, o)
}

func addPatchesFlag(cmd *cobra.Command, o *treeOptions) {
	cmd.Flags().StringVar(&o.patches, "patches", "", "series directory (default: config patches.dir, else the series built into mpspatch)")
}

// loadSeries loads --patches, else the config's patches.dir, else the embedded series.
// A lint failure is a checks-failed error (exit 1) listing every problem. A directory
// without a series file that holds *.patch files is plain `git format-patch` output,
// read as import would normalise it. Either way every file is read through
// series.PatchDir (regular files only, no links, bounded, never blocking), and ctx is
// checked between files.
func (d *deps) loadSeries(ctx context.Context, o *treeOptions) (*series.Series, error) {
	dir := o.patches
	// fromConfig is set when the directory is the config's patches.dir: a problem with it
	// is then reported at that line of the config file, which is what to edit.
	var fromConfig *config.Config
	if dir == "" {
		cfg, err := d.config()
		if err != nil {
			return nil, err
		}
		dir = cfg.Patches.Dir
		if dir != "" && cfg.Path != "" && !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(cfg.Path), dir)
		}
		fromConfig = &cfg
	}
	var s *series.Series
	var err error
	if dir == "" {
		s, err = series.LoadContext(ctx, patches.FS, ".", "(built-in)")
	} else {
		fi, serr := os.Stat(dir)
		if serr != nil || !fi.IsDir() {
			var pe *fs.PathError
			if errors.As(serr, &pe) {
				serr = pe.Err // "no such file or directory", without stat's repeat of the path
			}
			err := fmt.Errorf("patches directory %s: %w", dir, errOr(serr, errors.New("not a directory")))
			if fromConfig != nil {
				err = fromConfig.KeyError("patches.dir", err)
			}
			return nil, withCode(ExitUsage, err)
		}
		pd, perr := series.OpenPatchDir(dir)
		if perr != nil {
			return nil, usageErrorf("patches directory: %v", perr)
		}
		defer pd.Close()
		switch {
		case stack.LooksLikeFormatPatchDir(pd):
			s, err = d.loadFormatPatchDir(ctx, pd, d.printer().Warnf)
		default:
			s, err = series.LoadContext(ctx, pd, ".", dir)
			if _, lerr := os.Lstat(filepath.Join(dir, series.OrderFile)); err != nil && fromConfig != nil && errors.Is(lerr, os.ErrNotExist) {
				// Not a series at all (no order file, no patch mails): the config names the
				// wrong directory, which is a config error, not a series that fails its lint.
				return nil, withCode(ExitUsage, fromConfig.KeyError("patches.dir",
					fmt.Errorf("%s is not a series directory: it has no %s file and no git format-patch mails", dir, series.OrderFile)))
			}
		}
	}
	if err != nil {
		return nil, withCode(ExitCheckFailed, err)
	}
	return s, nil
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// seriesAndTree loads the series and opens --tree: the start of every command that works
// on a tree. The caller closes the root.
func (d *deps) seriesAndTree(ctx context.Context, o *treeOptions) (*series.Series, *os.Root, error) {
	s, err := d.loadSeries(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	root, err := openTree(o.tree)
	if err != nil {
		return nil, nil, err
	}
	return s, root, nil
}

// openTree opens --tree as an os.Root: every read and write of the engine goes through
// it, so no path can leave the tree even if a check were missed.
func openTree(dir string) (*os.Root, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("tree %s does not exist", dir)
		}
		return nil, usageErrorf("tree %s: %v", dir, err)
	}
	if !fi.IsDir() {
		return nil, usageErrorf("tree %s is not a directory", dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, usageErrorf("open tree %s: %v", dir, err)
	}
	return r, nil
}

// engineError maps the engine's errors to exit codes.
func engineError(err error) error {
	var ce *series.ConflictError
	var se *series.StateError
	var ue *series.UnsafePathError
	var je *series.JournalError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, series.ErrEmptySeries):
		return withCode(ExitUsage, err)
	case errors.As(err, &ce), errors.As(err, &se), errors.As(err, &ue), errors.As(err, &je), errors.Is(err, series.ErrBusy):
		return withCode(ExitConflict, err)
	}
	return err
}

func plural(n int, word string) string {
	switch {
	case n == 1:
		return fmt.Sprintf("%d %s", n, word)
	case strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "s"):
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// findTreeTop finds the tree a command given no tree works on, from the directory it was
// started in, as git finds a repository's top level: the nearest directory, this one or
// one above, that holds a `.git` entry (a directory, a file or a link: only its presence
// is looked at, it is never read or followed, so a planted `.git` file pointing elsewhere
// decides nothing but where the tree starts) or, for a tree with no git, both setup.py
// and aten/ (a PyTorch source tree). As git, the walk stops at the root, at a mount
// boundary (another file system) and before any directory GIT_CEILING_DIRECTORIES
// lists. It gives "." when the start is the top or when no top is found (the command then
// says what it says of "."), else the top's absolute, symlink-free path.
func findTreeTop(getenv func(string) string) string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return findTreeTopFrom(wd, getenv)
}

// findTreeTopFrom is findTreeTop from the directory wd.
func findTreeTopFrom(wd string, getenv func(string) string) string {
	start, err := filepath.EvalSymlinks(wd)
	if err != nil {
		return "."
	}
	ceilings := ceilingDirs(getenv("GIT_CEILING_DIRECTORIES"))
	startInfo, err := os.Lstat(start)
	if err != nil {
		return "."
	}
	for dir := start; ; {
		if isTreeTop(dir) {
			if dir == start {
				return "."
			}
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir || slices.Contains(ceilings, parent) {
			return "."
		}
		pi, err := os.Lstat(parent)
		if err != nil || !sameDevice(startInfo, pi) {
			return "."
		}
		dir = parent
	}
}

// isTreeTop says whether dir is the top of a checkout (see findTreeTop).
func isTreeTop(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return true
	}
	setup, err := os.Lstat(filepath.Join(dir, "setup.py"))
	if err != nil || !setup.Mode().IsRegular() {
		return false
	}
	aten, err := os.Lstat(filepath.Join(dir, "aten"))
	return err == nil && aten.IsDir()
}

// ceilingDirs reads GIT_CEILING_DIRECTORIES as git does: absolute paths separated by the
// list separator, relative and empty entries ignored, each resolved through its links.
func ceilingDirs(v string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(v) {
		if !filepath.IsAbs(d) {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		dirs = append(dirs, filepath.Clean(d))
	}
	return dirs
}

// discoverTree makes c, when no tree was named (neither --tree nor the argument), work on
// the tree found from the current directory upward (see findTreeTop), as git commands do.
func discoverTree(c *cobra.Command, getenv func(string) string) {
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		f := cmd.Flags().Lookup("tree")
		if f == nil || f.Changed || f.Value.String() != "." {
			return nil
		}
		if top := findTreeTop(getenv); top != "." {
			return cmd.Flags().Set("tree", top)
		}
		return nil
	}
}

// notPyTorchCheckout is the verdict status, apply and unapply give a directory that holds
// none of the files the series touches: the wrong directory, which is a usage error (exit
// 2), not a tree whose every file conflicts. nil when st says otherwise.
func notPyTorchCheckout(tree string, st *series.TreeStatus) error {
	if st == nil || len(st.Files) == 0 || missingFiles(st) != len(st.Files) {
		return nil
	}
	return usageErrorf("%s is not a PyTorch checkout: none of the %s the series touches exist there (%s, ...)",
		tree, plural(len(st.Files), "file"), series.QuotePath(st.Files[0].Path))
}

// wayOut is the next step after apply or unapply refused a tree in a mixed state (partly
// patched, or files with edits of their own): the files that are not at the base and the
// command that puts them back to the work tree's HEAD. It is git stash, not checkout, so
// that nothing is lost: the changes wait in the stash (git stash pop brings them back).
// A tree without git gets the files named and what to restore them from. "" when every
// file is at the base.
func wayOut(tree string, st *series.TreeStatus) string {
	var files []string
	for _, f := range st.Files {
		if f.Version != 0 || f.Edited {
			files = append(files, f.Path)
		}
	}
	if len(files) == 0 {
		return ""
	}
	if _, err := os.Lstat(filepath.Join(tree, ".git")); err != nil {
		return fmt.Sprintf("To start again from the base, restore %s from the PyTorch sources the series is for, then run the command again.",
			pluralNames(files))
	}
	argv := append([]string{"git", "-C", tree, "stash", "push", "--include-untracked", "-m", "mpspatch: mixed tree", "--"}, files...)
	return fmt.Sprintf("To start again from the commit checked out, set %s aside (kept in git's stash; `git stash pop` brings them back):\n  %s\nthen run the command again.",
		pluralNames(files), run.QuoteArgv(argv))
}

// pluralNames says "the file a" or "the 3 files a, b, c".
func pluralNames(files []string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = series.QuotePath(f)
	}
	if len(files) == 1 {
		return "the file " + quoted[0]
	}
	return fmt.Sprintf("the %d files %s", len(files), strings.Join(quoted, ", "))
}
