package gitcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/run"
)

// Version is a parsed `git --version`.
type Version struct {
	Major, Minor, Patch int
	// Raw is the whole line git printed, for messages ("git version 2.39.3 (Apple Git-145)").
	Raw string
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast says whether v is major.minor or newer.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

var versionRE = lazyregexp.New(`^git version (\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?`)

// ParseVersion reads the first line of `git --version` output: "git version 2.39.5",
// "git version 2.39.3 (Apple Git-145)", "git version 2.45.1.windows.1".
func ParseVersion(s string) (Version, error) {
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimSpace(line)
	m := versionRE().FindStringSubmatch(line)
	if m == nil {
		return Version{}, fmt.Errorf("parse git version: want \"git version X.Y[.Z]\", have %q", truncate(line, 80))
	}
	v := Version{Raw: line}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Version runs `git --version`.
func (g *Git) Version(ctx context.Context) (Version, error) {
	out, err := g.exec(ctx, call{op: "version", args: []string{"--version"}})
	if err != nil {
		return Version{}, err
	}
	return ParseVersion(string(out))
}

var fullSHARE = lazyregexp.New(`^[0-9a-f]{40}$`)

// lineFunc is a writer that calls fn for every line, \r and \n both ending one.
type lineFunc struct {
	mu  sync.Mutex
	fn  func(string)
	cur []byte
}

func (l *lineFunc) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range p {
		if c == '\n' || c == '\r' {
			l.emit()
			continue
		}
		l.cur = append(l.cur, c)
	}
	return len(p), nil
}

func (l *lineFunc) emit() {
	s := strings.TrimSpace(string(l.cur))
	l.cur = l.cur[:0]
	if s != "" {
		l.fn(s)
	}
}

func (l *lineFunc) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit()
}

// Exclude appends patterns to the repository's info/exclude file (wherever
// `git rev-parse --git-path` says it is), skipping those already there.
func (g *Git) Exclude(ctx context.Context, dir string, patterns ...string) error {
	out, err := g.exec(ctx, call{op: "exclude", dir: dir, args: []string{"rev-parse", "--git-path", "info/exclude"}})
	if err != nil {
		return err
	}
	path := strings.TrimSpace(string(out))
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("git exclude: read %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add bytes.Buffer
	if len(old) > 0 && old[len(old)-1] != '\n' {
		add.WriteByte('\n')
	}
	for _, p := range patterns {
		if !have[p] {
			add.WriteString(p + "\n")
			have[p] = true
		}
	}
	if add.Len() == 0 || (add.Len() == 1 && add.Bytes()[0] == '\n') {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("git exclude: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("git exclude: open %s: %w", path, err)
	}
	if _, err := f.Write(add.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("git exclude: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("git exclude: write %s: %w", path, err)
	}
	return nil
}

// RevParse resolves rev (a ref, "HEAD", an abbreviated SHA) in dir to a full commit SHA
// with the git binary.
func (g *Git) RevParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := g.exec(ctx, call{op: "rev-parse " + rev, dir: dir,
		args: []string{"rev-parse", "--verify", "--end-of-options", rev + "^{commit}"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// StatusEntry is one line of `git status --porcelain`.
type StatusEntry struct {
	// XY is the two-letter status: "M ", " M", "??", "A ", "D ", "R " ...
	XY   string
	Path string
}

// Status lists modified, staged and untracked paths in dir (ignored files excluded).
func (g *Git) Status(ctx context.Context, dir string) ([]StatusEntry, error) {
	out, err := g.exec(ctx, call{op: "status", dir: dir,
		args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=normal"}})
	if err != nil {
		return nil, err
	}
	return parseStatusZ(out)
}

// parseStatusZ reads `git status --porcelain=v1 -z`: "XY path\0", and for renames and
// copies a second NUL-terminated field holding the source path.
func parseStatusZ(out []byte) ([]StatusEntry, error) {
	var entries []StatusEntry
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 || f[2] != ' ' {
			return nil, fmt.Errorf("git status: unexpected porcelain record %q", truncate(string(f), 80))
		}
		e := StatusEntry{XY: string(f[:2]), Path: string(f[3:])}
		entries = append(entries, e)
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the source path of the rename or copy
		}
	}
	return entries, nil
}

// IsClean says whether dir has no staged, modified or untracked files (ignored files do
// not count), and lists those it has.
func (g *Git) IsClean(ctx context.Context, dir string) (bool, []StatusEntry, error) {
	entries, err := g.Status(ctx, dir)
	if err != nil {
		return false, nil, err
	}
	return len(entries) == 0, entries, nil
}

// CommitOptions tune Commit.
type CommitOptions struct {
	// Paths limits `git add` to these paths; empty stages everything (`git add -A`).
	Paths []string
	// AllowEmpty records a commit even when nothing changed.
	AllowEmpty bool
	// Author overrides the author ("Name <email>"); empty keeps git's identity.
	Author string
	// Date overrides the author date (any format git accepts).
	Date string
}

// Commit stages changes in dir and records them with message; it returns the new
// commit's SHA. Hooks are not run.
func (g *Git) Commit(ctx context.Context, dir, message string, opts CommitOptions) (string, error) {
	add := []string{"add", "-A", "--"}
	add = append(add, opts.Paths...)
	if _, err := g.exec(ctx, call{op: "commit: add", dir: dir, args: add}); err != nil {
		return "", err
	}
	args := []string{"commit", "-q", "--no-verify", "--cleanup=verbatim", "-F", "-"}
	if opts.AllowEmpty {
		args = append(args, "--allow-empty")
	}
	if opts.Author != "" {
		args = append(args, "--author", opts.Author)
	}
	if opts.Date != "" {
		args = append(args, "--date", opts.Date)
	}
	if _, err := g.exec(ctx, call{op: "commit", dir: dir, args: args, stdin: strings.NewReader(message)}); err != nil {
		return "", err
	}
	return g.RevParse(ctx, dir, "HEAD")
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Check only tests whether the patch applies; nothing is written.
	Check bool
	// Index applies to the index as well as the work tree.
	Index bool
	// ThreeWay falls back to a three-way merge when the context does not match.
	ThreeWay bool
	// Reverse unapplies the patch.
	Reverse bool
}

// Apply runs `git apply` on patch in dir. A patch that does not apply is an *Error whose
// Stderr holds git's explanation ("error: patch failed: file:line").
func (g *Git) Apply(ctx context.Context, dir string, patch []byte, opts ApplyOptions) error {
	args := []string{"apply"}
	if opts.Check {
		args = append(args, "--check")
	}
	if opts.Index {
		args = append(args, "--index")
	}
	if opts.ThreeWay {
		args = append(args, "--3way")
	}
	if opts.Reverse {
		args = append(args, "--reverse")
	}
	args = append(args, "-")
	_, err := g.exec(ctx, call{op: "apply", dir: dir, args: args, stdin: bytes.NewReader(patch)})
	return err
}

// MergeInput is one side of a three-way file merge.
type MergeInput struct {
	// Label names the side in conflict markers ("ours", "v2.9.1", "0003-stream-pool.patch").
	Label string
	Data  []byte
}

// MergeResult is the outcome of MergeFile.
type MergeResult struct {
	// Merged is the merged text, conflict markers (diff3 style) included.
	Merged []byte
	// Conflicts is how many conflicting regions Merged holds (git caps it at 127).
	Conflicts int
}

// MergeFile merges the change from base to other into current, as
// `git merge-file -p --diff3`. Conflicts are not an error: they are counted in the
// result and marked in the text.
//
// A binary input (a NUL byte in its first 8000 bytes, git's own test) is one conflict
// with current kept as it is: git merge-file refuses such files ("Cannot merge binary
// files"), and git apply --3way, whose merge this stands in for, takes them as a conflict
// through its binary merge driver.
func (g *Git) MergeFile(ctx context.Context, current, base, other MergeInput) (MergeResult, error) {
	if looksBinary(current.Data) || looksBinary(base.Data) || looksBinary(other.Data) {
		return MergeResult{Merged: current.Data, Conflicts: 1}, nil
	}
	tmp, err := os.MkdirTemp("", "mpspatch-merge-")
	if err != nil {
		return MergeResult{}, fmt.Errorf("git merge-file: %w", err)
	}
	defer os.RemoveAll(tmp)
	names := []string{"current", "base", "other"}
	args := []string{"merge-file", "-p", "--diff3"}
	for i, in := range []MergeInput{current, base, other} {
		label := in.Label
		if label == "" {
			label = names[i]
		}
		args = append(args, "-L", label)
	}
	for i, in := range []MergeInput{current, base, other} {
		p := filepath.Join(tmp, names[i])
		if err := os.WriteFile(p, in.Data, 0o600); err != nil {
			return MergeResult{}, fmt.Errorf("git merge-file: %w", err)
		}
		args = append(args, p)
	}
	out, err := g.exec(ctx, call{op: "merge-file", args: args})
	if err == nil {
		return MergeResult{Merged: out}, nil
	}
	// merge-file exits with the number of conflicts (1..127); above that is a failure.
	var ge *Error
	var ee *run.ExitError
	if errors.As(err, &ge) && errors.As(err, &ee) && ee.Result.Signal == 0 && !ee.Result.TimedOut &&
		ge.ExitCode > 0 && ge.ExitCode < 128 {
		return MergeResult{Merged: out, Conflicts: ge.ExitCode}, nil
	}
	return MergeResult{}, err
}

// looksBinary is git's buffer_is_binary: a NUL byte within the first 8000 bytes.
func looksBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
