package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mpspatch/mpspatch/internal/confined"
	"github.com/mpspatch/mpspatch/internal/series"
)

func init() {
	// The confined writes refuse .git under every spelling the series engine does.
	confined.GitDir = series.NamesGitDir
}

// Where `mpspatch run` keeps its state, relative to the tree.
const (
	runStampsDir = ".mpspatch/run/stamps"
	runLogsDir   = ".mpspatch/run/logs"
	runReportDir = ".mpspatch/run/report"
	// cmdLogsDir is where clone and build, run as stages, write their own logs.
	cmdLogsDir = ".mpspatch/logs"
)

// runState is everything `mpspatch run` writes to, opened so that no write leaves it:
// the tree, its stamps, logs and report directories, and the tree's lock.
type runState struct {
	root     *os.Root
	stamps   *confined.Dir
	logs     *confined.Dir
	report   *confined.Dir
	checkout string // confined.Identity of the tree
	lock     *series.TreeLock
}

func (s *runState) close() {
	s.lock.Release()
	for _, d := range []*confined.Dir{s.stamps, s.logs, s.report} {
		if d != nil {
			d.Close()
		}
	}
	if s.root != nil {
		s.root.Close()
	}
}

// releaseLock gives the tree's lock back before the stages that read only the build.
func (s *runState) releaseLock() { s.lock.Release() }

// openRunState checks, before the first write, every place run will write to, then
// creates what is missing and takes the tree's lock. dir is absolute; reportDir is
// absolute, inside the tree or (given with --report-dir) anywhere.
//
// Refused as bad input (exit 2), with nothing written: a directory that is neither a
// checkout nor empty (the clone would refuse it, after run had already written its logs
// there), and a symbolic link, a non-directory or a .git component anywhere on the way
// to the stamps, the logs or the report directory, or a link inside the report directory,
// where verify writes files by name. A tree another mpspatch is writing is busy (exit 3).
func openRunState(dir, reportDir string) (*runState, error) {
	fi, err := os.Stat(dir)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, usageErrorf("run: %s: %v", dir, err)
	case !fi.IsDir():
		return nil, usageErrorf("run: %s exists and is not a directory", dir)
	}
	reportRel, inTree := relInside(dir, reportDir)
	if exists {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); errors.Is(err, fs.ErrNotExist) {
			// The clone stage would refuse this directory; refuse it before writing.
			if err := checkEmptyDir(dir); err != nil {
				return nil, withCode(ExitUsage, fmt.Errorf("run: %w", err))
			}
		}
		if err := checkRunPaths(dir, reportDir, reportRel, inTree); err != nil {
			return nil, err
		}
	}

	if !exists {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("run: create %s: %w", dir, err)
		}
	}
	st := &runState{}
	ok := false
	defer func() {
		if !ok {
			st.close()
		}
	}()
	if st.root, err = os.OpenRoot(dir); err != nil {
		return nil, fmt.Errorf("run: open %s: %w", dir, err)
	}
	if st.checkout, err = confined.Identity(st.root, dir); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if st.lock, err = series.Hold(st.root); err != nil {
		return nil, withCode(ExitConflict, fmt.Errorf("run: %s: %w", dir, err))
	}
	if st.stamps, err = confined.Open(st.root, dir, runStampsDir, true); err != nil {
		return nil, confinedError(err)
	}
	if st.logs, err = confined.Open(st.root, dir, runLogsDir, true); err != nil {
		return nil, confinedError(err)
	}
	if st.report, err = openReportDir(st.root, dir, reportDir, reportRel, inTree); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

// refusedCheckout returns the clone stage's refusal of dir (a checkout of another commit,
// or one whose HEAD git cannot read), found before run writes anything into it, or nil.
// It looks only where run has no state yet (no .mpspatch/run): there no stamp can call the
// clone stage up to date, so the stage is sure to run and to refuse the same way. Where
// run has state, the clone's stamp decides as it always did.
func refusedCheckout(ctx context.Context, dir, commit string) error {
	if !noRunState(dir) {
		return nil
	}
	_, _, err := existingCheckout(ctx, dir, commit)
	return err
}

// noRunState reports whether dir certainly holds no state of run's: no .mpspatch, or a
// real .mpspatch directory without run/ (a link there is left to openRunState to refuse).
func noRunState(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, ".mpspatch"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil || !fi.IsDir() {
		return false
	}
	_, err = os.Lstat(filepath.Join(dir, filepath.FromSlash(".mpspatch/run")))
	return errors.Is(err, fs.ErrNotExist)
}

// checkRunPaths refuses, creating nothing, any unsafe component on the way to where run
// writes, and any link in the report directory.
func checkRunPaths(dir, reportDir, reportRel string, inTree bool) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("run: open %s: %w", dir, err)
	}
	defer root.Close()
	paths := []string{runStampsDir, runLogsDir, cmdLogsDir}
	if inTree {
		paths = append(paths, reportRel)
	}
	for _, rel := range paths {
		if err := confined.Check(root, dir, rel); err != nil {
			return confinedError(err)
		}
	}
	var report *confined.Dir
	if inTree {
		report, err = confined.Open(root, dir, reportRel, false)
	} else {
		report, err = openOutside(reportDir, false)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return confinedError(err)
	}
	defer report.Close()
	return confinedError(report.CheckNoLinks())
}

// openReportDir opens (creating) the report directory: through the tree when it is in
// the tree; as the user named it otherwise (--report-dir is the user's own choice, like
// any output path), with its files still written whole and by rename.
func openReportDir(root *os.Root, dir, reportDir, reportRel string, inTree bool) (*confined.Dir, error) {
	if inTree {
		d, err := confined.Open(root, dir, reportRel, true)
		return d, confinedError(err)
	}
	d, err := openOutside(reportDir, true)
	return d, confinedError(err)
}

func openOutside(dir string, create bool) (*confined.Dir, error) {
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create report directory %s: %w", dir, err)
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return confined.Open(r, dir, ".", false)
}

// relInside returns p relative to dir, slash-separated, when p is dir or inside it, by
// the path as given or by dir's real path (a tree reached through a link).
func relInside(dir, p string) (string, bool) {
	if rel, ok := relInsidePath(dir, p); ok {
		return rel, true
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		return relInsidePath(real, p)
	}
	return "", false
}

func relInsidePath(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// confinedError makes a refused path bad input (exit 2): a planted link or a broken tree.
func confinedError(err error) error {
	var ue *confined.UnsafeError
	if errors.As(err, &ue) {
		return withCode(ExitUsage, fmt.Errorf("run: %w", err))
	}
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// heldTreeLockKey carries, in the context of the commands `mpspatch run` runs as its
// stages, the tree lock that run holds: apply and build work under it instead of
// waiting for a lock of their own, which the same process already holds.
type heldTreeLockKey struct{}

func withHeldTreeLock(ctx context.Context, l *series.TreeLock) context.Context {
	return context.WithValue(ctx, heldTreeLockKey{}, l)
}

// heldTreeLock is the lock run holds, or nil outside run.
func heldTreeLock(ctx context.Context) *series.TreeLock {
	l, _ := ctx.Value(heldTreeLockKey{}).(*series.TreeLock)
	return l
}
