package gitcli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/redact"
)

// FailureKind says what a failed git command ran into, read from what git wrote, so
// that a caller can name the problem and its fix, and pick an exit code, instead of
// showing git's argv and output.
type FailureKind int

const (
	// FailOther is any failure not recognised below.
	FailOther FailureKind = iota
	// FailUnknownRevision: the repository has no tag, branch or commit of that name.
	FailUnknownRevision
	// FailMissingRemoteRef: the remote has no ref or commit of that name.
	FailMissingRemoteRef
	// FailNoRepository: the URL names no repository (404, not a git repository).
	FailNoRepository
	// FailUnreachable: the remote could not be reached (DNS, refused, timed out).
	FailUnreachable
)

func (k FailureKind) String() string {
	switch k {
	case FailUnknownRevision:
		return "unknown revision"
	case FailMissingRemoteRef:
		return "missing remote ref"
	case FailNoRepository:
		return "no repository"
	case FailUnreachable:
		return "unreachable"
	}
	return "other"
}

// failurePatterns are git's messages for each kind (git 2.30 to 2.47, C locale; the
// environment mpspatch gives git sets LC_ALL=C only in tests, so a translated message
// is FailOther, which is still reported, with git's own words). The first submatch, when
// there is one, is what the message is about.
var failurePatterns = []struct {
	kind FailureKind
	re   func() *regexp.Regexp
}{
	{FailUnknownRevision, lazyregexp.New(`ambiguous argument '([^']*)': unknown revision`)},
	{FailUnknownRevision, lazyregexp.New(`bad revision '([^']*)'`)},
	{FailUnknownRevision, lazyregexp.New(`invalid reference: (\S+)`)},
	{FailUnknownRevision, lazyregexp.New(`(?:^|; )fatal: Needed a single revision`)},
	{FailMissingRemoteRef, lazyregexp.New(`couldn't find remote ref (\S+)`)},
	{FailMissingRemoteRef, lazyregexp.New(`not our ref ([0-9a-f]{7,64})`)},
	{FailNoRepository, lazyregexp.New(`unable to access '([^']*)': The requested URL returned error: 40[34]`)},
	{FailNoRepository, lazyregexp.New(`repository '([^']*)' not found`)},
	{FailNoRepository, lazyregexp.New(`'([^']*)' does not appear to be a git repository`)},
	{FailUnreachable, lazyregexp.New(`unable to access '([^']*)'`)},
	{FailUnreachable, lazyregexp.New(`Could not resolve host(?:name)?:? (\S+)`)},
	{FailUnreachable, lazyregexp.New(`(?i)(?:failed to connect to|couldn't connect to server|connection refused|connection timed out|network is unreachable|operation timed out|temporary failure in name resolution|could not read from remote repository)`)},
}

// accessPrefixRE is the start of git's "unable to access 'URL': why".
var accessPrefixRE = lazyregexp.New(`^unable to access '[^']*': `)

// revSuffixRE is what git appends to a revision in an argument (v1^{commit}, v1~2).
var revSuffixRE = lazyregexp.New(`(\^\{[a-z]*\}|[~^][0-9]*)+$`)

// classify reads git's stderr for a known kind of failure and what it is about.
func classify(stderr string) (FailureKind, string) {
	for _, p := range failurePatterns {
		if m := p.re().FindStringSubmatch(stderr); m != nil {
			subject := ""
			if len(m) > 1 {
				subject = m[1]
			}
			if p.kind == FailUnknownRevision {
				subject = revSuffixRE().ReplaceAllString(subject, "")
			}
			return p.kind, strings.TrimSuffix(subject, "/")
		}
	}
	return FailOther, ""
}

// Kind says what the failure was, from git's own words.
func (e *Error) Kind() FailureKind {
	k, _ := e.classified()
	return k
}

func (e *Error) classified() (FailureKind, string) {
	if e.kind != nil {
		return *e.kind, e.subject
	}
	k, s := classify(e.Stderr)
	return k, s
}

// Summary is one sentence that names what is wrong and how to fix it, for the failures
// Kind recognises; "" for FailOther. It names no log: the caller knows where git's
// output went.
func (e *Error) Summary() string {
	kind, subject := e.classified()
	tree := e.Dir
	if tree == "" {
		tree = "."
	}
	switch kind {
	case FailUnknownRevision:
		if subject == "" {
			return fmt.Sprintf("a revision git %s was given does not exist in %s; check the names with `git -C %s tag --list` and `git -C %s branch --all`", e.Op, tree, tree, tree)
		}
		if fullOrAbbrevSHA(subject) {
			return fmt.Sprintf("unknown revision %s in %s; fetch it with `git -C %s fetch origin %s`", subject, tree, tree, subject)
		}
		return fmt.Sprintf("unknown revision %s in %s; fetch it with `git -C %s fetch origin tag %s` (a tag), or check the name with `git -C %s tag --list`", subject, tree, tree, subject, tree)
	case FailMissingRemoteRef:
		if fullOrAbbrevSHA(subject) {
			return redact.Text(fmt.Sprintf("the remote %s has no commit %s; check [upstream] commit in the config (and the URL)", e.remote(), subject))
		}
		return redact.Text(fmt.Sprintf("the remote %s has no ref %s; check the name with `git ls-remote %s`", e.remote(), subject, e.remote()))
	case FailNoRepository:
		return redact.Text(fmt.Sprintf("%s is not a git repository (or not one you may read); check the URL ([upstream] url in the config, or --url)", RedactURL(subject)))
	case FailUnreachable:
		where := e.remote()
		if strings.Contains(subject, "://") {
			where = RedactURL(subject)
		}
		why := lastFatal(e.Stderr)
		if m := accessPrefixRE().FindStringIndex(why); m != nil {
			why = why[m[1]:] // the URL is named already
		}
		return redact.Text(fmt.Sprintf("cannot reach %s (%s); check the network connection and the URL", where, why))
	}
	return ""
}

// remote is the URL (or remote name) the failed command talked to: the argument after
// "--" or the first that looks like a URL, else "origin".
func (e *Error) remote() string {
	for i, a := range e.Args {
		if a == "--" && i+1 < len(e.Args) {
			return RedactURL(e.Args[i+1])
		}
	}
	for _, a := range e.Args {
		if strings.Contains(a, "://") {
			return RedactURL(a)
		}
	}
	return "origin"
}

func fullOrAbbrevSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// lastFatal is git's last "fatal:" or "error:" line without the prefix, or the last line.
func lastFatal(stderr string) string {
	lines := strings.Split(stderr, "; ")
	for i := len(lines) - 1; i >= 0; i-- {
		for _, p := range []string{"fatal: ", "error: "} {
			if rest, ok := strings.CutPrefix(lines[i], p); ok {
				return rest
			}
		}
	}
	return lines[len(lines)-1]
}

// progressLineRE matches git's progress reports ("Receiving objects:  45% (450/1000)",
// "remote: Counting objects: 12", "Updating files: 100% (3/3), done."), which say nothing
// about why git failed and, joined, made a failure one long line.
var progressLineRE = lazyregexp.New(`^(remote: )?[A-Z][a-z]+( [a-z]+)*: +\d+(%| )|^(remote: )?[A-Z][a-z]+( [a-z]+)*: +\d+(, done\.)?$|^remote: Total \d+`)

// isProgress reports whether a line of git's stderr is a progress report.
func isProgress(line string) bool { return progressLineRE().MatchString(line) }
