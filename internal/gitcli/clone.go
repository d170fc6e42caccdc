package gitcli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

// ErrExists is returned by Clone when the target already holds a repository.
var ErrExists = errors.New("target already holds a git repository")

// ErrForeignClone is wrapped when a directory holds a clone marker that this user's
// mpspatch did not write for that directory: the clone in it is not resumed, and nothing
// in it is touched.
var ErrForeignClone = errors.New("the clone marker was not written by this user's mpspatch for this directory")

// CloneOptions tune Clone.
type CloneOptions struct {
	// Full fetches the whole history of the commit instead of the commit alone.
	Full bool
	// Filter is a partial-clone filter ("blob:none": file contents fetched when first
	// needed) for the fetch and the submodules.
	Filter string
	// Jobs is how many submodules are fetched at once; 0 leaves git's default.
	Jobs int
	// NoSubmodules skips `git submodule update`.
	NoSubmodules bool
	// Exclude patterns are appended to .git/info/exclude right after init, so files
	// mpspatch keeps inside the tree (logs) never make it look modified.
	Exclude []string
	// Progress, when set, receives each step's name and every line git prints about its
	// progress (git redraws with \r; each redraw is one line here). Called from several
	// goroutines, never at once.
	Progress func(step, line string)
}

// CloneMarker is the file, inside the clone's .git directory, that marks a clone Clone
// started and did not finish. It exists from before `git init` (the .git directory is
// made with the marker in it, then renamed into place) until everything is checked out,
// so that no kill leaves a .git without it. It carries a MAC made with the user's state
// key and names the directory, so a marker that came with a copied or planted directory
// is never taken for one of ours.
const CloneMarker = "mpspatch-clone-in-progress"

// CloneStage is where Clone makes the .git directory, with the marker in it, before
// renaming it into place. A clone killed before the rename leaves it behind: the next
// Clone replaces it, and a directory holding only it (and mpspatch's own .mpspatch) is
// as good as empty.
const CloneStage = ".git.mpspatch-init"

const (
	cloneMarkerDomain  = "mpspatch clone marker v1"
	cloneMarkerMagic   = "mpspatch-clone hmac-sha256="
	cloneMarkerVersion = 1
	maxCloneMarker     = 64 << 10
	// cloneIDEnv carries the clone's ID in the environment of every git process the
	// clone starts, and so of every process those start: a re-run finds what survived a
	// killed clone by it, with no risk of taking another process for one of ours.
	cloneIDEnv = "MPSPATCH_CLONE_ID"
)

// cloneMarker is the marker's content.
type cloneMarker struct {
	Version int    `json:"version"`
	Dir     string `json:"dir"`
	Commit  string `json:"commit"`
	// ID is random: the value of cloneIDEnv in the clone's processes.
	ID string `json:"id"`
}

// CloneInterrupted says whether dir holds a clone marker at all (ours or not): a clone
// that did not finish, which `mpspatch clone` resumes or refuses.
func CloneInterrupted(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git", CloneMarker))
	return err == nil
}

// InterruptedClone says whether dir holds a clone that this user's mpspatch started in
// dir and did not finish. A marker it cannot vouch for (another user's, another
// directory's, changed, or not a regular file) is an error wrapping ErrForeignClone.
func InterruptedClone(dir string) (bool, error) {
	if !CloneInterrupted(dir) {
		return false, nil
	}
	key, _, err := statekey.Load()
	if err != nil && !errors.Is(err, statekey.ErrNoKey) {
		return false, err
	}
	_, err = readCloneMarker(dir, key)
	return err == nil, err
}

// canonicalDir is the absolute path of dir with symbolic links resolved (as far as it
// exists), which the marker records: the same directory named another way (macOS's /tmp
// and /private/tmp) is still the same clone.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// readCloneMarker reads and authenticates dir's marker; nil when there is none.
func readCloneMarker(dir string, key []byte) (*cloneMarker, error) {
	abs, err := canonicalDir(dir)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(abs, ".git", CloneMarker)
	foreign := func(why string) error {
		return fmt.Errorf("clone into %s: %s: %w (%s); remove the directory to start over", abs, file, ErrForeignClone, why)
	}
	if fi, err := os.Lstat(filepath.Join(abs, ".git")); err == nil && !fi.IsDir() {
		if CloneInterrupted(abs) {
			return nil, foreign(".git is not a directory")
		}
		return nil, nil
	}
	f, err := os.OpenFile(file, os.O_RDONLY|openNoFollowFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, foreign(err.Error())
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, foreign(err.Error())
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxCloneMarker {
		return nil, foreign("not a regular file of at most 64 KiB")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCloneMarker+1))
	if err != nil {
		return nil, foreign(err.Error())
	}
	macLine, body, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || !bytes.HasPrefix(macLine, []byte(cloneMarkerMagic)) {
		return nil, foreign("no MAC line: an older mpspatch's marker, or not mpspatch's")
	}
	mac, err := hex.DecodeString(string(macLine[len(cloneMarkerMagic):]))
	if err != nil || len(key) == 0 || !statekey.Equal(mac, statekey.MAC(key, cloneMarkerDomain, body)) {
		return nil, foreign("its MAC does not verify with this user's state key")
	}
	var m cloneMarker
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, foreign("invalid: " + err.Error())
	}
	switch {
	case m.Version != cloneMarkerVersion:
		return nil, foreign(fmt.Sprintf("version %d, want %d", m.Version, cloneMarkerVersion))
	case m.Dir != abs:
		return nil, foreign(fmt.Sprintf("written for %s", m.Dir))
	case !fullSHARE().MatchString(m.Commit):
		return nil, foreign("invalid commit")
	case len(m.ID) != 32 || strings.Trim(m.ID, "0123456789abcdef") != "":
		return nil, foreign("invalid ID")
	}
	return &m, nil
}

func encodeCloneMarker(m *cloneMarker, key []byte) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	out := make([]byte, 0, len(cloneMarkerMagic)+2*sha256.Size+1+len(body))
	out = append(append(out, cloneMarkerMagic...), hex.EncodeToString(statekey.MAC(key, cloneMarkerDomain, body))...)
	return append(append(out, '\n'), body...), nil
}

// createGitDir makes dir/.git holding only the marker, in one rename: a kill leaves
// either no .git (and perhaps CloneStage, replaced next time) or one with the marker.
func createGitDir(dir string, m *cloneMarker, key []byte) error {
	data, err := encodeCloneMarker(m, key)
	if err != nil {
		return err
	}
	stage := filepath.Join(dir, CloneStage)
	if err := os.RemoveAll(stage); err != nil {
		return err
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(stage, CloneMarker), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	return os.Rename(stage, filepath.Join(dir, ".git"))
}

// Clone creates dir (or uses it when it exists without a .git) and checks out commit
// from url there, detached: init, fetch of that single commit (--depth 1 unless Full),
// checkout --detach, then the submodules recursively at the commits the tree pins.
//
// Every step is one a re-run can redo, and the marker (CloneMarker) exists from before
// `git init` until the end: a dir holding a clone that this user's mpspatch interrupted
// here, at any instant, is resumed. Whatever the interrupted clone's git processes left
// running is stopped first, and the lock files they left in .git are removed once
// nothing holds them; the objects already fetched are kept, and init, the remote, the
// fetch, the checkout and the submodules run again. A marker that is not ours stops the
// clone (ErrForeignClone), and nothing in that directory is touched.
func (g *Git) Clone(ctx context.Context, url, dir, commit string, opts CloneOptions) error {
	if !fullSHARE().MatchString(commit) {
		return fmt.Errorf("git clone: want a full 40-hex commit SHA, have %q", commit)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("git clone: %w", err)
	}
	key, err := statekey.Ensure()
	if err != nil {
		return fmt.Errorf("git clone into %s: %w", dir, err)
	}
	m, err := readCloneMarker(dir, key)
	if err != nil {
		return err
	}
	resume := m != nil
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil && !resume {
		return fmt.Errorf("git clone into %s: %w", dir, ErrExists)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("git clone: create %s: %w", dir, err)
	}
	report := opts.Progress
	if report == nil {
		report = func(string, string) {}
	}
	var mu sync.Mutex
	progress := func(step string) *lineFunc {
		return &lineFunc{fn: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			report(step, line)
		}}
	}

	if resume {
		report("init", "resuming the interrupted clone in "+dir)
		if err := settleInterrupted(dir, m); err != nil {
			return fmt.Errorf("git clone: resume in %s: %w", dir, err)
		}
	} else {
		id := make([]byte, 16)
		if _, err := rand.Read(id); err != nil {
			return fmt.Errorf("git clone: %w", err)
		}
		real, err := canonicalDir(dir)
		if err != nil {
			return fmt.Errorf("git clone: %w", err)
		}
		m = &cloneMarker{Version: cloneMarkerVersion, Dir: real, Commit: commit, ID: hex.EncodeToString(id)}
		report("init", "git init "+dir)
		if err := createGitDir(dir, m, key); err != nil {
			return fmt.Errorf("git clone: create %s/.git: %w", dir, err)
		}
	}
	// Every git process of the clone carries its ID and dies with mpspatch where the
	// kernel allows; a re-run stops whatever escaped both.
	run := func(c call) ([]byte, error) {
		c.dir, c.dieWithParent = dir, true
		c.env = append(c.env, cloneIDEnv+"="+m.ID)
		return g.exec(ctx, c)
	}
	// git init fills in a .git that holds only the marker, and is a no-op on one that
	// is whole: the same step for a fresh clone and for one killed anywhere before.
	if _, err := run(call{op: "clone: init", args: []string{"init", "-q"}}); err != nil {
		return err
	}
	if err := setOrigin(run, url); err != nil {
		return err
	}
	if len(opts.Exclude) > 0 {
		if err := g.Exclude(ctx, dir, opts.Exclude...); err != nil {
			return err
		}
	}

	fetch := []string{"fetch", "--progress", "--no-tags"}
	if !opts.Full {
		fetch = append(fetch, "--depth", "1")
	}
	if opts.Filter != "" {
		fetch = append(fetch, "--filter="+opts.Filter)
	}
	fetch = append(fetch, "origin", commit)
	report("fetch", "fetching "+commit+" from "+url)
	p := progress("fetch")
	_, err = run(call{op: "clone: fetch " + commit, args: fetch, stderr: p})
	p.flush()
	if err != nil {
		return err
	}

	report("checkout", "checking out "+commit)
	p = progress("checkout")
	checkout := []string{"-c", "advice.detachedHead=false", "checkout", "--progress", "--detach"}
	if resume {
		checkout = append(checkout, "--force") // over what an interrupted checkout left
	}
	_, err = run(call{op: "clone: checkout " + commit, args: append(checkout, commit), stderr: p})
	p.flush()
	if err != nil {
		return err
	}
	marker := filepath.Join(dir, ".git", CloneMarker)
	done := func() error {
		if err := os.Remove(marker); err != nil {
			return fmt.Errorf("git clone: %w", err)
		}
		report("done", "checked out "+commit)
		return nil
	}
	if opts.NoSubmodules {
		return done()
	}
	if _, err := os.Stat(filepath.Join(dir, ".gitmodules")); err != nil {
		return done()
	}
	sub := []string{"submodule", "update", "--init", "--recursive", "--progress"}
	if !opts.Full {
		sub = append(sub, "--depth", "1")
	}
	if opts.Filter != "" {
		sub = append(sub, "--filter="+opts.Filter)
	}
	if opts.Jobs > 0 {
		sub = append(sub, "--jobs", strconv.Itoa(opts.Jobs))
	}
	if resume {
		// A submodule whose checkout was killed has the right HEAD and a work tree
		// missing files; without --force git sees the commit and does nothing.
		sub = append(sub, "--force")
	}
	report("submodules", "updating submodules")
	p = progress("submodules")
	_, err = run(call{op: "clone: submodules", args: sub, stderr: p, stdout: p})
	p.flush()
	if err != nil && resume && ctx.Err() == nil {
		// A submodule whose clone was killed is left half made (a git directory without
		// the commit, a work tree without a checkout), and git will not take it up again:
		// the interrupted clone's submodules are started over, once.
		report("submodules", "the interrupted clone left submodules half made ("+err.Error()+"); starting them over")
		if rerr := restartSubmodules(run, dir); rerr != nil {
			return fmt.Errorf("%w; starting the submodules over: %v", err, rerr)
		}
		p = progress("submodules")
		_, err = run(call{op: "clone: submodules", args: sub, stderr: p, stdout: p})
		p.flush()
	}
	if err != nil {
		return err
	}
	return done()
}

// restartSubmodules removes every submodule of the clone at dir, work tree and git
// directory (.git/modules), so that `git submodule update --init` clones them afresh. Only
// for a clone the marker says is ours: what it removes, the interrupted clone made.
func restartSubmodules(run func(call) ([]byte, error), dir string) error {
	out, err := run(call{op: "clone: list submodules", args: []string{"ls-files", "--stage", "-z"}})
	if err != nil {
		return err
	}
	for _, rec := range splitNUL(out) {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		if !filepath.IsLocal(path) {
			return fmt.Errorf("submodule path %q leaves the tree", path)
		}
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(path))); err != nil {
			return err
		}
	}
	return os.RemoveAll(filepath.Join(dir, ".git", "modules"))
}

// setOrigin points the remote origin at url: added when missing, its URL set when a
// killed clone added it already.
func setOrigin(run func(call) ([]byte, error), url string) error {
	_, err := run(call{op: "clone: look up remote", args: []string{"config", "--local", "--get", "remote.origin.url"}})
	var ge *Error
	switch {
	case errors.As(err, &ge) && ge.ExitCode == 1: // no such key
		_, err = run(call{op: "clone: add remote", args: []string{"remote", "add", "--", "origin", url}})
	case err == nil:
		_, err = run(call{op: "clone: set remote", args: []string{"remote", "set-url", "--", "origin", url}})
	}
	return err
}

// settleInterrupted makes an interrupted clone's directory safe to carry on in: the
// processes the interrupted clone left running (found by its ID) are killed and waited
// for, then the lock files git left in .git are removed, unless a live process (another
// git the user started there) holds one open.
func settleInterrupted(dir string, m *cloneMarker) error {
	entry := cloneIDEnv + "=" + m.ID
	const tries = 200 // 10 s at 50 ms: SIGKILLed processes go within milliseconds
	for i := 0; ; i++ {
		ours, _, err := scanProcesses(entry, nil)
		if errors.Is(err, errNoProcessTable) {
			// Nothing here can tell whether a git of the interrupted clone still runs:
			// its locks are left alone, and git names any it trips over.
			return nil
		}
		if err != nil {
			return err
		}
		if len(ours) == 0 {
			break
		}
		if i == tries {
			return fmt.Errorf("processes %v of the interrupted clone are still running after SIGKILL; run the command again when they are gone", ours)
		}
		for _, pid := range ours {
			killProcess(pid, entry)
		}
		time.Sleep(50 * time.Millisecond)
	}
	locks, err := findLocks(filepath.Join(dir, ".git"))
	if err != nil || len(locks) == 0 {
		return err
	}
	if _, holders, err := scanProcesses(entry, locks); err != nil {
		return err
	} else {
		for _, l := range locks {
			if pid, ok := holders[l]; ok {
				return fmt.Errorf("%s is held by a running process (pid %d) that the interrupted clone did not start; run the command again when it has finished", l, pid)
			}
		}
	}
	for _, l := range locks {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the stale lock %s: %w", l, err)
		}
	}
	return nil
}

// findLocks lists the lock files (NAME.lock, as git names them) in the git directory
// gitDir, submodules' git directories included, never following a symbolic link.
func findLocks(gitDir string) ([]string, error) {
	var locks []string
	err := filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for stale locks in %s: %w", gitDir, err)
	}
	return locks, nil
}
