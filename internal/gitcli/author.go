package gitcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The operations in this file serve the patch-author workflow (internal/stack): writing
// commits as mails, moving a branch, resetting a tree.

// formatPatchConfig pins every configuration key that changes what `git format-patch`
// writes, so that the mails are the same whatever the user's ~/.gitconfig or the
// repository's config says. Flags below pin the rest; a flag wins over config, and
// where both exist both are given so that a future git that drops one still honours
// the other.
var formatPatchConfig = []string{
	"-c", "diff.noprefix=false",
	"-c", "diff.mnemonicPrefix=false",
	"-c", "format.noprefix=false",
	"-c", "core.quotePath=true",
	"-c", "diff.suppressBlankEmpty=false",
	"-c", "diff.statGraphWidth=0",
	"-c", "diff.statNameWidth=0",
	"-c", "format.encodeEmailHeaders=true",
	"-c", "format.headers=",
	"-c", "format.forceInBodyFrom=false",
	"-c", "i18n.logOutputEncoding=UTF-8",
	"-c", "log.showSignature=false",
	"-c", "color.ui=never",
	"-c", "color.diff=never",
	// Files over the threshold are diffed as binary, and a user's attributes file can mark
	// any path -diff or give it a diff driver: both turn text hunks into binary patches.
	"-c", "core.bigFileThreshold=512m",
	"-c", "core.attributesFile=" + devNull,
}

// formatPatchFlags are the normalising flags: a zero SHA on the From line, no
// [PATCH n/m], no version signature, full blob IDs on the index lines (the series
// engine's status relies on them), no rename detection, the default diff algorithm and
// context, a/ b/ prefixes, and none of the headers format.* settings may add; inline
// text rather than MIME attachments (format.attach), the indent heuristic git defaults
// to (diff.indentHeuristic), and gitlinks shown as git shows them by default.
// TestFormatPatchIgnoresEachSetting tries 70 settings one by one, in the user's and the
// repository's config.
var formatPatchFlags = []string{
	"format-patch", "--stdout", "--zero-commit", "--no-numbered", "--no-signature",
	"--full-index", "--no-renames", "--no-color", "--no-thread", "--no-cover-letter",
	"--no-signoff", "--subject-prefix=PATCH", "--src-prefix=a/", "--dst-prefix=b/",
	"-U3", "--inter-hunk-context=0", "--diff-algorithm=myers", "--no-ext-diff",
	"--no-textconv", "--no-relative", "--no-to", "--no-cc", "--no-add-header", "--no-base",
	"--no-from", "--no-notes", "--encoding=UTF-8", "-O" + devNull, "--binary",
	"--no-attach", "--indent-heuristic", "--ignore-submodules=none", "--submodule=short",
}

// devNull is an empty order file; -O with it disables diff.orderFile.
const devNull = "/dev/null"

// FormatPatch writes the commits in rng (a revision range such as "BASE..HEAD") as one
// mbox of normalised mails, oldest first, independent of the user's git configuration
// (see formatPatchFlags).
func (g *Git) FormatPatch(ctx context.Context, dir, rng string) ([]byte, error) {
	args := append(append(append([]string{}, formatPatchConfig...), formatPatchFlags...), "--end-of-options", rng)
	return g.exec(ctx, call{op: "format-patch " + rng, dir: dir, args: args})
}

// RevList lists the commits of rng, oldest first (`git rev-list --reverse`).
func (g *Git) RevList(ctx context.Context, dir, rng string, extra ...string) ([]string, error) {
	args := append([]string{"rev-list", "--reverse"}, extra...)
	args = append(args, "--end-of-options", rng)
	out, err := g.exec(ctx, call{op: "rev-list " + rng, dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// CurrentBranch returns the branch HEAD points at ("" when HEAD is detached).
func (g *Git) CurrentBranch(ctx context.Context, dir string) (string, error) {
	out, err := g.exec(ctx, call{op: "symbolic-ref HEAD", dir: dir, args: []string{"symbolic-ref", "-q", "--short", "HEAD"}})
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// BranchCommit returns the commit branch points at, or "" when there is no such branch.
func (g *Git) BranchCommit(ctx context.Context, dir, branch string) (string, error) {
	if err := CheckBranchName(branch); err != nil {
		return "", fmt.Errorf("git rev-parse: branch %w", err)
	}
	out, err := g.exec(ctx, call{op: "show-ref " + branch, dir: dir,
		args: []string{"rev-parse", "-q", "--verify", "refs/heads/" + branch + "^{commit}"}})
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// SetBranch points branch at commit. With old non-empty the update happens only if the
// branch still points at old (compare and swap, as `git update-ref NEW OLD`).
func (g *Git) SetBranch(ctx context.Context, dir, branch, commit, old, reason string) error {
	if err := CheckBranchName(branch); err != nil {
		return fmt.Errorf("git update-ref: branch %w", err)
	}
	args := []string{"update-ref", "-m", reason, "refs/heads/" + branch, commit}
	if old != "" {
		args = append(args, old)
	}
	_, err := g.exec(ctx, call{op: "update-ref " + branch, dir: dir, args: args})
	return err
}

// Switch checks out branch (force discards local changes to tracked files when set). A
// name git would not take as a branch is refused before git runs: after the check it
// cannot be read as an option, and the `--` that checkout gets keeps it from being a path.
func (g *Git) Switch(ctx context.Context, dir, branch string, force bool) error {
	if err := CheckBranchName(branch); err != nil {
		return fmt.Errorf("git checkout: branch %w", err)
	}
	return g.checkout(ctx, dir, force, branch)
}

// Detach checks out commit with a detached HEAD; force discards changes to tracked
// files and unmerged index entries (as `git checkout -f`).
func (g *Git) Detach(ctx context.Context, dir, commit string, force bool) error {
	if err := checkRev(commit); err != nil {
		return fmt.Errorf("git checkout --detach: %w", err)
	}
	return g.checkout(ctx, dir, force, "--detach", commit)
}

// checkRev refuses a revision git could take for an option: checkout and reset read
// their revision before any `--`, and neither takes --end-of-options in every git
// mpspatch supports.
func checkRev(rev string) error {
	if rev == "" || rev[0] == '-' {
		return fmt.Errorf("revision %q: empty or starts with a dash", rev)
	}
	return nil
}

// checkout runs `git checkout -q [-f] WHAT... --`, quietly about a detached HEAD.
func (g *Git) checkout(ctx context.Context, dir string, force bool, what ...string) error {
	args := []string{"-c", "advice.detachedHead=false", "checkout", "-q"}
	if force {
		args = append(args, "-f")
	}
	args = append(append(args, what...), "--")
	_, err := g.exec(ctx, call{op: "checkout " + strings.Join(what, " "), dir: dir, args: args})
	return err
}

// ResetHard makes HEAD, index and work tree match commit (`git reset --hard`); untracked
// files are left alone.
func (g *Git) ResetHard(ctx context.Context, dir, commit string) error {
	if err := checkRev(commit); err != nil {
		return fmt.Errorf("git reset --hard: %w", err)
	}
	_, err := g.exec(ctx, call{op: "reset --hard " + commit, dir: dir, args: []string{"reset", "-q", "--hard", commit, "--"}})
	return err
}

// GitDir returns the absolute path of the repository's git directory (where state that
// must not show up in the work tree belongs).
func (g *Git) GitDir(ctx context.Context, dir string) (string, error) {
	out, err := g.exec(ctx, call{op: "rev-parse --git-dir", dir: dir, args: []string{"rev-parse", "--absolute-git-dir"}})
	if err != nil {
		return "", err
	}
	return filepath.Clean(strings.TrimSpace(string(out))), nil
}

// LastCommitTouching returns the newest commit of rng that touched any of paths, with its
// subject ("" when none did).
func (g *Git) LastCommitTouching(ctx context.Context, dir, rng string, paths []string) (sha, subject string, err error) {
	args := []string{"log", "-1", "--no-color", "--format=%H %s", "--end-of-options", rng, "--"}
	args = append(args, paths...)
	out, err := g.exec(ctx, call{op: "log " + rng, dir: dir, args: args})
	if err != nil {
		return "", "", err
	}
	line := strings.TrimSpace(string(out))
	sha, subject, _ = strings.Cut(line, " ")
	return sha, subject, nil
}

// CommitStaged records the index as a commit with message, author and author date, and
// returns its SHA. Hooks are not run; the message is kept verbatim.
func (g *Git) CommitStaged(ctx context.Context, dir, message, author, date string, allowEmpty bool) (string, error) {
	args := []string{"commit", "-q", "--no-verify", "--no-gpg-sign", "--cleanup=verbatim", "-F", "-"}
	if allowEmpty {
		args = append(args, "--allow-empty")
	}
	if author != "" {
		args = append(args, "--author", author)
	}
	if date != "" {
		args = append(args, "--date", date)
	}
	if _, err := g.exec(ctx, call{op: "commit", dir: dir, args: args, stdin: strings.NewReader(message)}); err != nil {
		return "", err
	}
	return g.RevParse(ctx, dir, "HEAD")
}

// Add stages paths (additions, modifications and deletions) in dir. The paths are the
// ones a patch touches, so they are added even where .gitignore matches them (-f), as
// git am and git rebase do: a tracked file in an ignored directory (fzf's
// bin/fzf-tmux) or a new file there is the patch's, not the ignore rules'.
func (g *Git) Add(ctx context.Context, dir string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	args := append([]string{"add", "-A", "-f", "--"}, paths...)
	_, err := g.exec(ctx, call{op: "add", dir: dir, args: args})
	return err
}

// Unmerged lists the paths the index holds in conflict.
func (g *Git) Unmerged(ctx context.Context, dir string) ([]string, error) {
	out, err := g.exec(ctx, call{op: "diff --name-only --diff-filter=U", dir: dir,
		args: []string{"-c", "core.quotePath=false", "diff", "--name-only", "-z", "--diff-filter=U"}})
	if err != nil {
		return nil, err
	}
	return splitNUL(out), nil
}

// splitNUL splits git's -z output into its non-empty fields.
func splitNUL(out []byte) []string {
	var fields []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			fields = append(fields, string(p))
		}
	}
	return fields
}

// HasStagedChanges says whether the index differs from HEAD.
func (g *Git) HasStagedChanges(ctx context.Context, dir string) (bool, error) {
	_, err := g.exec(ctx, call{op: "diff --cached --quiet", dir: dir, args: []string{"diff", "--cached", "--quiet", "--no-ext-diff"}})
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("git diff --cached: %w", err)
	}
	return false, nil
}

// RevParseCommits resolves several revisions to full commit SHAs with one git process.
func (g *Git) RevParseCommits(ctx context.Context, dir string, revs ...string) ([]string, error) {
	args := []string{"rev-parse"}
	for _, r := range revs {
		if strings.HasPrefix(r, "-") {
			return nil, fmt.Errorf("git rev-parse: revision %q starts with a dash", r)
		}
		args = append(args, r+"^{commit}")
	}
	out, err := g.exec(ctx, call{op: "rev-parse " + strings.Join(revs, " "), dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	shas := strings.Fields(string(out))
	if len(shas) != len(revs) {
		return nil, fmt.Errorf("git rev-parse %s: %d commits for %d revisions", strings.Join(revs, " "), len(shas), len(revs))
	}
	return shas, nil
}

// RevListParents lists the commits of rng, oldest first, each followed by its parents.
// With boundary, the commits just outside the range come too, their IDs prefixed with
// "-" (`git rev-list --boundary`).
func (g *Git) RevListParents(ctx context.Context, dir, rng string, boundary ...bool) ([][]string, error) {
	args := []string{"rev-list", "--reverse", "--parents"}
	if len(boundary) > 0 && boundary[0] {
		args = append(args, "--boundary")
	}
	args = append(args, "--end-of-options", rng)
	out, err := g.exec(ctx, call{op: "rev-list " + rng, dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	var res [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			res = append(res, f)
		}
	}
	return res, nil
}

// WriteTree writes the index as a tree object and returns its ID.
func (g *Git) WriteTree(ctx context.Context, dir string) (string, error) {
	out, err := g.exec(ctx, call{op: "write-tree", dir: dir, args: []string{"write-tree"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// CommitTreeOptions describe a commit made by CommitTree.
type CommitTreeOptions struct {
	Tree, Parent string
	Message      string
	// AuthorName, AuthorEmail and AuthorDate override git's identity and clock for the
	// author; the committer stays the user.
	AuthorName, AuthorEmail, AuthorDate string
}

// CommitTree records a commit of tree on parent (`git commit-tree`) and returns its ID.
// Unlike `git commit` it neither refreshes nor writes the index, which on a tree of
// tens of thousands of files is most of a commit's cost; the caller moves HEAD.
func (g *Git) CommitTree(ctx context.Context, dir string, o CommitTreeOptions) (string, error) {
	var env []string
	if o.AuthorName != "" {
		env = append(env, "GIT_AUTHOR_NAME="+o.AuthorName, "GIT_AUTHOR_EMAIL="+o.AuthorEmail)
	}
	if o.AuthorDate != "" {
		env = append(env, "GIT_AUTHOR_DATE="+o.AuthorDate)
	}
	args := []string{"commit-tree", "--no-gpg-sign", o.Tree}
	if o.Parent != "" {
		args = append(args, "-p", o.Parent)
	}
	args = append(args, "-F", "-")
	out, err := g.exec(ctx, call{op: "commit-tree", dir: dir, args: args, stdin: strings.NewReader(o.Message), env: env})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// MoveHead points HEAD (detached or not: through the branch it names) at commit, only
// if it still points at old.
func (g *Git) MoveHead(ctx context.Context, dir, commit, old, reason string) error {
	_, err := g.exec(ctx, call{op: "update-ref HEAD", dir: dir, args: []string{"update-ref", "-m", reason, "HEAD", commit, old}})
	return err
}

// TrackedChanges lists staged and unstaged changes to tracked files, without looking for
// untracked ones (which on a large tree is most of what `git status` costs).
func (g *Git) TrackedChanges(ctx context.Context, dir string) ([]StatusEntry, error) {
	out, err := g.exec(ctx, call{op: "status -uno", dir: dir,
		args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=no"}})
	if err != nil {
		return nil, err
	}
	return parseStatusZ(out)
}

// Untracked lists the untracked, not ignored files among paths.
func (g *Git) Untracked(ctx context.Context, dir string, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	args := append([]string{"ls-files", "-z", "--others", "--exclude-standard", "--"}, paths...)
	out, err := g.exec(ctx, call{op: "ls-files --others", dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	return splitNUL(out), nil
}

// SetHead detaches HEAD at commit without touching index or work tree
// (`git update-ref --no-deref HEAD`).
func (g *Git) SetHead(ctx context.Context, dir, commit, reason string) error {
	_, err := g.exec(ctx, call{op: "update-ref --no-deref HEAD", dir: dir, args: []string{"update-ref", "--no-deref", "-m", reason, "HEAD", commit}})
	return err
}

// AttachHead points HEAD at branch without touching index or work tree
// (`git symbolic-ref HEAD refs/heads/BRANCH`): right when both already hold the
// branch's commit.
func (g *Git) AttachHead(ctx context.Context, dir, branch, reason string) error {
	if err := CheckBranchName(branch); err != nil {
		return fmt.Errorf("git symbolic-ref: branch %w", err)
	}
	_, err := g.exec(ctx, call{op: "symbolic-ref HEAD", dir: dir, args: []string{"symbolic-ref", "-m", reason, "HEAD", "refs/heads/" + branch}})
	return err
}

// IndexDiffers says whether the index differs from commit's tree.
func (g *Git) IndexDiffers(ctx context.Context, dir, commit string) (bool, error) {
	_, err := g.exec(ctx, call{op: "diff-index --cached " + commit, dir: dir, args: []string{"diff-index", "--cached", "--quiet", commit, "--"}})
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, nil
}

// CommitMessage is one commit's ID, parents and raw message.
type CommitMessage struct {
	SHA     string
	Parents []string
	Message string
}

// FirstParentMessages reads the messages of at most max commits from head back along
// first parents, newest first (`git log --first-parent`), with the user's log settings
// that could change a message (signatures, encoding) pinned.
func (g *Git) FirstParentMessages(ctx context.Context, dir, head string, max int) ([]CommitMessage, error) {
	if strings.HasPrefix(head, "-") {
		return nil, fmt.Errorf("git log: revision %q starts with a dash", head)
	}
	args := []string{"-c", "log.showSignature=false", "-c", "i18n.logOutputEncoding=UTF-8",
		"log", "--first-parent", "-z", "--no-notes", "--no-decorate", "--max-count=" + fmt.Sprint(max),
		"--format=%H %P%n%B", "--end-of-options", head}
	out, err := g.exec(ctx, call{op: "log " + head, dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	var res []CommitMessage
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		ids, msg, _ := strings.Cut(rec, "\n")
		f := strings.Fields(ids)
		if len(f) == 0 || !fullSHARE().MatchString(f[0]) {
			return nil, fmt.Errorf("git log %s: unexpected record %q", head, truncate(rec, 80))
		}
		res = append(res, CommitMessage{SHA: f[0], Parents: f[1:], Message: msg})
	}
	return res, nil
}

// HasCommit reports whether rev names a commit the repository at dir holds.
func (g *Git) HasCommit(ctx context.Context, dir, rev string) bool {
	if strings.HasPrefix(rev, "-") {
		return false
	}
	_, err := g.exec(ctx, call{op: "cat-file -e " + rev, dir: dir,
		args: []string{"cat-file", "-e", "--end-of-options", rev + "^{commit}"}})
	return err == nil
}

// Renames lists the files renamed between two commits, old path to new, with git's own
// rename detection as its merge uses it (50% similarity, up to merge.renameLimit's
// default of 7,000 candidates), independent of the user's diff settings.
func (g *Git) Renames(ctx context.Context, dir, from, to string) (map[string]string, error) {
	if strings.HasPrefix(from, "-") || strings.HasPrefix(to, "-") {
		return nil, fmt.Errorf("git diff: revision %q..%q starts with a dash", from, to)
	}
	out, err := g.exec(ctx, call{op: "diff --find-renames " + from + " " + to, dir: dir,
		args: []string{"-c", "core.quotePath=false", "diff", "--no-ext-diff", "--no-textconv", "--name-status", "-z",
			"--find-renames", "-l7000", "--diff-filter=R", "--end-of-options", from, to}})
	if err != nil {
		return nil, err
	}
	f := splitNUL(out)
	renames := map[string]string{}
	for i := 0; i+2 < len(f); i += 3 {
		if !strings.HasPrefix(f[i], "R") {
			return nil, fmt.Errorf("git diff --name-status %s %s: unexpected status %q", from, to, truncate(f[i], 20))
		}
		renames[f[i+1]] = f[i+2]
	}
	return renames, nil
}

// RefNames lists up to max short names of the tags, branches and remote-tracking branches
// of the repository at dir that start with prefix, newest first (shell completion).
func (g *Git) RefNames(ctx context.Context, dir, prefix string, max int) ([]string, error) {
	args := []string{"for-each-ref", "--sort=-creatordate", fmt.Sprintf("--count=%d", max), "--format=%(refname:short)"}
	if !strings.ContainsAny(prefix, "*?[\\") {
		// for-each-ref matches a pattern whole or up to a slash; a glob makes it a prefix,
		// and its * stops at a slash, so */** reaches names with slashes (origin/main).
		for _, ns := range []string{"refs/tags/", "refs/heads/", "refs/remotes/"} {
			args = append(args, ns+prefix+"*", ns+prefix+"*/**")
		}
	} else {
		args = append(args, "refs/tags/", "refs/heads/", "refs/remotes/")
	}
	out, err := g.exec(ctx, call{op: "for-each-ref", dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && strings.HasPrefix(l, prefix) && !strings.HasSuffix(l, "/HEAD") {
			names = append(names, l)
		}
	}
	return names, nil
}
