package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// DefaultDir is where the cache lives: os.UserCacheDir()/mpspatch ($XDG_CACHE_HOME or
// ~/.cache on Linux, ~/Library/Caches on macOS).
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("upstream cache: %w", err)
	}
	return filepath.Join(d, "mpspatch"), nil
}

// Cache is the upstream cache directory.
type Cache struct {
	// Dir is the cache root (DefaultDir unless a caller chooses).
	Dir string
	// Git runs git; nil means the git on PATH.
	Git *gitcli.Git
}

// Stats count what a run fetched and read.
type Stats struct {
	LsRemotes      int `json:"ls_remotes"`
	CommitsFetched int `json:"commits_fetched"`
	BlobsFetched   int `json:"blobs_fetched"`
	BlobsRead      int `json:"blobs_read"`
}

// Repo is the cached repository of one upstream URL, locked for the caller until Close.
type Repo struct {
	// Dir is the bare repository.
	Dir string
	// URL is the upstream URL without credentials (what messages show).
	URL string

	fetchURL string // what git is given: URL, credentials moved into git's environment
	git      *gitcli.Git
	locks    []*fileLock
	stats    *Stats
}

// repoName is the directory of url's repository: a hash of the URL without its
// credentials, so a token change does not start a new cache.
func repoName(cleanURL string) string {
	sum := sha256.Sum256([]byte(cleanURL))
	return hex.EncodeToString(sum[:8]) + ".git"
}

// Open locks and, on first use, creates the cached repository of url. Two runs on one
// URL take turns; runs on different URLs go at once.
func (c *Cache) Open(ctx context.Context, url string) (*Repo, error) {
	if err := gitcli.CheckURL(url); err != nil {
		return nil, err
	}
	g := c.Git
	if g == nil {
		g = &gitcli.Git{}
	}
	g, clean := g.WithCredentials(url)
	if err := os.MkdirAll(filepath.Join(c.Dir, "upstream"), 0o755); err != nil {
		return nil, fmt.Errorf("upstream cache: %w", err)
	}
	shared, err := lockFile(filepath.Join(c.Dir, "lock"), false)
	if err != nil {
		return nil, fmt.Errorf("upstream cache: %w", err)
	}
	dir := filepath.Join(c.Dir, "upstream", repoName(gitcli.RedactURL(clean)))
	own, err := lockFile(dir+".lock", true)
	if err != nil {
		shared.unlock()
		return nil, fmt.Errorf("upstream cache: %w", err)
	}
	r := &Repo{Dir: dir, URL: gitcli.RedactURL(url), fetchURL: clean, git: g, locks: []*fileLock{own, shared}, stats: &Stats{}}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if err := r.create(ctx); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func (r *Repo) create(ctx context.Context) error {
	tmp := r.Dir + ".new"
	os.RemoveAll(tmp)
	if err := r.git.InitBare(ctx, tmp); err != nil {
		return fmt.Errorf("upstream cache: %w", err)
	}
	// The cache holds shallow, filtered commits only; gc would gain nothing and could
	// drop what a run is reading.
	for k, v := range map[string]string{"gc.auto": "0", "maintenance.auto": "false", "core.logAllRefUpdates": "false"} {
		if err := r.git.SetConfig(ctx, tmp, k, v); err != nil {
			return fmt.Errorf("upstream cache: %w", err)
		}
	}
	if err := os.Rename(tmp, r.Dir); err != nil {
		return fmt.Errorf("upstream cache: %w", err)
	}
	return nil
}

// Close releases the locks.
func (r *Repo) Close() {
	for _, l := range r.locks {
		l.unlock()
	}
	r.locks = nil
}

// Stats returns what the repository fetched and read since Open.
func (r *Repo) Stats() Stats { return *r.stats }

// ResolvedRef is a REF and the commit it names upstream.
type ResolvedRef struct {
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	// Name is the full upstream ref ("refs/tags/v2.9.1"); empty for a commit SHA.
	Name string `json:"name,omitempty"`
}

// Resolve finds the commit of each ref (a tag, a branch, or a full commit SHA) with one
// ls-remote for all the names. A tag names the commit it peels to.
func (r *Repo) Resolve(ctx context.Context, refs []string) ([]ResolvedRef, error) {
	var patterns []string
	for _, ref := range refs {
		if !isFullSHA(ref) {
			patterns = append(patterns, "refs/tags/"+ref, "refs/tags/"+ref+"^{}", "refs/heads/"+ref)
			if strings.HasPrefix(ref, "refs/") {
				patterns = append(patterns, ref, ref+"^{}")
			}
		}
	}
	found := map[string]string{}
	if len(patterns) > 0 {
		r.stats.LsRemotes++
		remote, err := r.git.LsRemote(ctx, r.fetchURL, patterns...)
		if err != nil {
			return nil, fmt.Errorf("resolve %s at %s: %w", strings.Join(refs, ", "), r.URL, err)
		}
		for _, rr := range remote {
			found[rr.Name] = rr.SHA
		}
	}
	out := make([]ResolvedRef, 0, len(refs))
	for _, ref := range refs {
		if isFullSHA(ref) {
			out = append(out, ResolvedRef{Ref: ref, Commit: strings.ToLower(ref)})
			continue
		}
		var names []string
		if strings.HasPrefix(ref, "refs/") {
			names = append(names, ref)
		}
		names = append(names, "refs/tags/"+ref, "refs/heads/"+ref)
		var res *ResolvedRef
		for _, n := range names {
			if sha, ok := found[n+"^{}"]; ok {
				res = &ResolvedRef{Ref: ref, Commit: sha, Name: n}
			} else if sha, ok := found[n]; ok {
				res = &ResolvedRef{Ref: ref, Commit: sha, Name: n}
			}
			if res != nil {
				break
			}
		}
		if res == nil {
			return nil, fmt.Errorf("resolve %s: no tag or branch of that name at %s (a commit must be given as a full 40-hex SHA)", ref, r.URL)
		}
		out = append(out, *res)
	}
	return out, nil
}

func isFullSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// EnsureCommits fetches those commits the cache lacks, all in one shallow, blobless fetch.
func (r *Repo) EnsureCommits(ctx context.Context, commits []string, progress func(string)) error {
	// A commit is in the cache when its ref is: the fetch writes the ref after the
	// objects, and the cache never packs refs (gc is off). No git process needed.
	var missing []string
	for _, c := range uniq(commits) {
		if _, err := os.Stat(filepath.Join(r.Dir, "refs", "mpspatch", c)); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if progress != nil {
		shown := make([]string, 0, 3)
		for _, c := range missing[:min(len(missing), 3)] {
			shown = append(shown, short(c))
		}
		if len(missing) > 3 {
			shown = append(shown, fmt.Sprintf("%d more", len(missing)-3))
		}
		// The commits are named: a check can fetch twice (the REFs, then the pinned base
		// on the first conflict), and two identical lines read as one fetch repeated.
		progress(fmt.Sprintf("fetching %s (%s) from %s (trees only)", plural(len(missing), "commit"), strings.Join(shown, ", "), r.URL))
	}
	err := r.git.Fetch(ctx, r.Dir, r.fetchURL, missing, gitcli.FetchOptions{Depth: 1, Filter: "blob:none"})
	if perr := r.git.DropPromisor(ctx, r.Dir, r.fetchURL); err == nil && perr != nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("fetch %s from %s: %w", strings.Join(missing, ", "), r.URL, err)
	}
	r.stats.CommitsFetched += len(missing)
	return nil
}

// Snapshot is the content of some paths at one commit: a series.FileSource.
type Snapshot struct {
	Commit string
	files  map[string]series.File
	refuse map[string]string // path -> why it cannot be patched (a symbolic link, a submodule)
}

// ReadFile implements series.FileSource. A path outside the snapshot's paths reads as
// absent.
func (s *Snapshot) ReadFile(p string) (series.File, error) {
	if why, ok := s.refuse[p]; ok {
		return series.File{}, &series.UnsafePathError{Msg: fmt.Sprintf("%s at %s: %s", p, short(s.Commit), why)}
	}
	return s.files[p], nil
}

// Snapshots reads paths at each of commits (which the cache must hold: EnsureCommits),
// fetching first, in one request for all of them, the blobs the cache lacks, and reading
// them all with one git cat-file --batch.
func (r *Repo) Snapshots(ctx context.Context, commits, paths []string, progress func(string)) ([]*Snapshot, error) {
	paths = uniq(paths)
	snaps := make([]*Snapshot, len(commits))
	byPath := make([]map[string]gitcli.TreeEntry, len(commits))
	var oids []string
	for i, commit := range commits {
		entries, err := r.git.LsTree(ctx, r.Dir, commit, paths)
		if err != nil {
			return nil, r.damaged(ctx, fmt.Errorf("list %s at %s: %w", plural(len(paths), "path"), short(commit), err))
		}
		snaps[i] = &Snapshot{Commit: commit, files: map[string]series.File{}, refuse: map[string]string{}}
		byPath[i] = map[string]gitcli.TreeEntry{}
		for _, e := range entries {
			switch {
			case e.Mode == "120000":
				snaps[i].refuse[e.Path] = "is a symbolic link upstream; refusing to patch through it"
			case e.Type != "blob":
				snaps[i].refuse[e.Path] = "is a " + e.Type + " upstream, not a file"
			default:
				byPath[i][e.Path] = e
				oids = append(oids, e.OID)
			}
		}
	}
	oids = uniq(oids)
	blobs, missing, err := r.git.ReadObjects(ctx, r.Dir, oids)
	if err != nil {
		return nil, r.damaged(ctx, fmt.Errorf("read the series' files: %w", err))
	}
	if len(missing) > 0 {
		if progress != nil {
			progress(fmt.Sprintf("fetching %s the series touches from %s", plural(len(missing), "file version"), r.URL))
		}
		err := r.git.FetchObjects(ctx, r.Dir, r.fetchURL, missing)
		if perr := r.git.DropPromisor(ctx, r.Dir, r.fetchURL); err == nil && perr != nil {
			err = perr
		}
		if err != nil {
			return nil, fmt.Errorf("fetch the series' files from %s: %w", r.URL, err)
		}
		r.stats.BlobsFetched += len(missing)
		// An object git still cannot read after fetching it is there but damaged (git
		// reads a loose object it cannot inflate as missing, and a fetch does not replace
		// an object file that exists).
		fetched, err := r.git.ReadBlobs(ctx, r.Dir, missing)
		if err != nil {
			return nil, r.damaged(ctx, fmt.Errorf("read the series' files: %w", err))
		}
		for k, v := range fetched {
			blobs[k] = v
		}
	}
	r.stats.BlobsRead += len(oids)
	for i := range commits {
		for p, e := range byPath[i] {
			mode := fs.FileMode(0o644)
			if e.Mode == "100755" {
				mode = 0o755
			}
			snaps[i].files[p] = series.File{Exists: true, Data: blobs[e.OID], Mode: mode}
		}
	}
	return snaps, nil
}

// DamagedError says the cached repository cannot be read as it should: an object that does
// not hash to its ID, or that git cannot read or find where the cache says it is. The
// cache is a copy of the remote, never the only one: Check discards it and fetches again.
type DamagedError struct {
	Dir string
	Err error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("upstream cache %s is damaged: %v", e.Dir, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// damaged marks err, a failure to read the cached repository, as damage, unless it is
// no fault of the repository's (an interrupt, no git at all).
func (r *Repo) damaged(ctx context.Context, err error) error {
	var nf *gitcli.NotFoundError
	if ctx.Err() != nil || errors.As(err, &nf) {
		return err
	}
	return &DamagedError{Dir: r.Dir, Err: err}
}

// reset replaces the cached repository with an empty one.
func (r *Repo) reset(ctx context.Context) error {
	if err := os.RemoveAll(r.Dir); err != nil {
		return fmt.Errorf("upstream cache: discard %s: %w", r.Dir, err)
	}
	return r.create(ctx)
}

// healingSnapshots is Snapshots that, when the cache turns out to be damaged, says so
// through warn, discards the repository and fetches everything again, once.
func (r *Repo) healingSnapshots(ctx context.Context, commits, paths []string, progress, warn func(string)) ([]*Snapshot, error) {
	snaps, err := r.Snapshots(ctx, commits, paths, progress)
	var de *DamagedError
	if !errors.As(err, &de) {
		return snaps, err
	}
	warn(fmt.Sprintf("%v; discarded it and fetched again", de))
	if err := r.reset(ctx); err != nil {
		return nil, err
	}
	if err := r.EnsureCommits(ctx, commits, progress); err != nil {
		return nil, err
	}
	return r.Snapshots(ctx, commits, paths, progress)
}

// Clean removes everything the cache holds, waiting for runs that use it to finish.
// It returns how many bytes it freed.
func (c *Cache) Clean() (int64, error) {
	if _, err := os.Stat(c.Dir); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	l, err := lockFile(filepath.Join(c.Dir, "lock"), true)
	if err != nil {
		return 0, fmt.Errorf("clean cache %s: %w", c.Dir, err)
	}
	defer l.unlock()
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return 0, fmt.Errorf("clean cache %s: %w", c.Dir, err)
	}
	var freed int64
	for _, e := range entries {
		if e.Name() == "lock" {
			continue
		}
		p := filepath.Join(c.Dir, e.Name())
		freed += diskUsage(p)
		if err := os.RemoveAll(p); err != nil {
			return freed, fmt.Errorf("clean cache: %w", err)
		}
	}
	return freed, nil
}

func diskUsage(p string) int64 {
	var n int64
	filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
