package gitcli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/redact"
)

// RemoteRef is one line of `git ls-remote`.
type RemoteRef struct {
	Name string // "refs/tags/v2.9.1", "refs/tags/v2.9.1^{}" for the peeled commit
	SHA  string
}

// LsRemote lists the refs of url matching patterns (all refs when none), in one request.
//
// git matches ls-remote patterns against the tail of each name after the server sent
// them all, so patterns alone download every ref: on a big forge that is mostly
// refs/pull/* (pytorch/pytorch has well over 100,000). --tags and --heads are the only
// way to make git send protocol v2 ref prefixes (refs/tags/, refs/heads/), so the
// server lists only those; LsRemote passes them whenever every pattern lies under them,
// and pins protocol v2 (a user's protocol.version = 0 or 1 has no prefixes at all).
func (g *Git) LsRemote(ctx context.Context, url string, patterns ...string) ([]RemoteRef, error) {
	args := append([]string{"-c", "protocol.version=2", "ls-remote"}, lsRemoteScope(patterns)...)
	args = append(append(args, "--", url), patterns...)
	out, err := g.exec(ctx, call{op: "ls-remote " + RedactURL(url), args: args})
	if err != nil {
		return nil, err
	}
	var refs []RemoteRef
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		sha, name, ok := strings.Cut(line, "\t")
		if !ok || !fullSHARE().MatchString(sha) {
			return nil, fmt.Errorf("git ls-remote %s: unexpected line %q", RedactURL(url), truncate(line, 80))
		}
		refs = append(refs, RemoteRef{Name: name, SHA: sha})
	}
	return refs, nil
}

// lsRemoteScope returns the ls-remote flags that limit what the server lists to the
// namespaces patterns lie in: --tags when every pattern is under refs/tags/, --heads
// when under refs/heads/, both for a mix of the two; none when a pattern could name a
// ref elsewhere (or there is no pattern), since the flags also filter git's output.
func lsRemoteScope(patterns []string) []string {
	if len(patterns) == 0 {
		return nil
	}
	var tags, heads bool
	for _, p := range patterns {
		switch {
		case strings.HasPrefix(p, "refs/tags/"):
			tags = true
		case strings.HasPrefix(p, "refs/heads/"):
			heads = true
		default:
			return nil
		}
	}
	var flags []string
	if tags {
		flags = append(flags, "--tags")
	}
	if heads {
		flags = append(flags, "--heads")
	}
	return flags
}

// FetchOptions tune Fetch.
type FetchOptions struct {
	// Depth limits history (1: the commits alone); 0 fetches all of it.
	Depth int
	// Filter is a partial-clone filter ("blob:none"); empty fetches every object.
	Filter string
	// Progress receives git's progress lines.
	Progress func(line string)
}

// Fetch fetches commits (full SHAs) from url into the repository at dir and points
// refs/mpspatch/<sha> at each, so they stay reachable. No tags, no FETCH_HEAD.
func (g *Git) Fetch(ctx context.Context, dir, url string, commits []string, opts FetchOptions) error {
	args := []string{"fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no"}
	if opts.Progress != nil {
		args = append(args, "--progress")
	}
	if opts.Depth > 0 {
		args = append(args, "--depth", strconv.Itoa(opts.Depth))
	}
	if opts.Filter != "" {
		args = append(args, "--filter="+opts.Filter)
	}
	args = append(args, "--", url)
	for _, c := range commits {
		if !fullSHARE().MatchString(c) {
			return fmt.Errorf("git fetch: want a full 40-hex commit SHA, have %q", c)
		}
		args = append(args, "+"+c+":refs/mpspatch/"+c)
	}
	c := call{op: "fetch from " + RedactURL(url), dir: dir, args: args}
	var lf *lineFunc
	if opts.Progress != nil {
		lf = &lineFunc{fn: opts.Progress}
		c.stderr = lf
	}
	_, err := g.exec(ctx, c)
	if lf != nil {
		lf.flush()
	}
	return err
}

// FetchObjects fetches the objects oids (blobs, typically) from url into the partial
// repository at dir, in one request, the way git itself fetches missing objects of a
// partial clone on demand.
func (g *Git) FetchObjects(ctx context.Context, dir, url string, oids []string) error {
	if len(oids) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, o := range oids {
		if !fullSHARE().MatchString(o) {
			return fmt.Errorf("git fetch: want a full 40-hex object ID, have %q", o)
		}
		in.WriteString(o + "\n")
	}
	args := []string{"-c", "fetch.negotiationAlgorithm=noop", "fetch", "--no-tags", "--no-write-fetch-head",
		"--recurse-submodules=no", "--filter=blob:none", "--stdin", "--", url}
	_, err := g.exec(ctx, call{op: fmt.Sprintf("fetch %d objects from %s", len(oids), RedactURL(url)), dir: dir, args: args, stdin: &in})
	return err
}

// TreeEntry is one entry of `git ls-tree`.
type TreeEntry struct {
	Mode string // "100644", "100755", "120000" (symbolic link), "160000" (submodule), "040000"
	Type string // "blob", "tree", "commit"
	OID  string
	Path string
}

// LsTree lists the entries of commit's tree at exactly paths (no globbing); a path the
// tree does not hold is simply not listed.
func (g *Git) LsTree(ctx context.Context, dir, commit string, paths []string) ([]TreeEntry, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	args := append([]string{"--literal-pathspecs", "ls-tree", "-z", "--full-tree", commit, "--"}, paths...)
	out, err := g.exec(ctx, call{op: "ls-tree " + commit, dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	return parseLsTree(commit, out)
}

// ReadBlobs reads the blobs oids from the repository at dir with one `git cat-file
// --batch`. A missing object is an error.
func (g *Git) ReadBlobs(ctx context.Context, dir string, oids []string) (map[string][]byte, error) {
	blobs, missing, err := g.ReadObjects(ctx, dir, oids)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("git cat-file --batch: object %s is missing", missing[0])
	}
	return blobs, nil
}

// ReadObjects reads the objects oids from the repository at dir with one `git cat-file
// --batch` and lists those it lacks. It fetches nothing only when the repository has
// no promisor remote (DropPromisor); otherwise git fetches each missing object alone.
//
// The output is read as git writes it, each object into a buffer of exactly its size, so a
// 400 MB file costs 400 MB, not the several times that holding git's whole output and then
// copying each object out of it did. Every object is checked against its ID (the hash of
// its type, size and content): an object store that hands back other bytes (a damaged or
// tampered cache) is a *CorruptObjectError, never content.
func (g *Git) ReadObjects(ctx context.Context, dir string, oids []string) (map[string][]byte, []string, error) {
	objs := map[string][]byte{}
	if len(oids) == 0 {
		return objs, nil, nil
	}
	for _, o := range oids {
		if !objectIDRE().MatchString(o) {
			return nil, nil, fmt.Errorf("git cat-file --batch: want a full hex object ID, have %q", truncate(o, 80))
		}
	}
	in := strings.Join(oids, "\n") + "\n"
	var missing []string
	consume := func(out io.Reader) error {
		r := bufio.NewReaderSize(out, 64<<10)
		for _, want := range oids {
			hdr, err := r.ReadString('\n')
			if err != nil {
				return fmt.Errorf("short output: %w", noEOF(err))
			}
			f := strings.Fields(hdr)
			if len(f) == 2 && f[1] == "missing" && f[0] == want {
				missing = append(missing, f[0])
				continue
			}
			if len(f) != 3 || f[0] != want {
				return fmt.Errorf("unexpected header %q for object %s", truncate(hdr, 80), want)
			}
			size, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || size < 0 || size > maxObjectSize {
				return fmt.Errorf("unexpected header %q (size)", truncate(hdr, 80))
			}
			data := make([]byte, size)
			if _, err := io.ReadFull(r, data); err != nil {
				return fmt.Errorf("object %s: %w", want, noEOF(err))
			}
			if nl, err := r.ReadByte(); err != nil || nl != '\n' {
				return fmt.Errorf("object %s: no newline after its %d bytes", want, size)
			}
			if have := objectID(f[1], data, len(want)); have != want {
				return &CorruptObjectError{OID: want, Type: f[1], Have: have}
			}
			objs[want] = data
		}
		return nil
	}
	if _, err := g.exec(ctx, call{op: "cat-file --batch", dir: dir, args: []string{"cat-file", "--batch"}, stdin: strings.NewReader(in), consume: consume}); err != nil {
		return nil, nil, err
	}
	return objs, missing, nil
}

// objectIDRE matches a full object ID: SHA-1 or SHA-256.
var objectIDRE = lazyregexp.New(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// maxObjectSize bounds the size a cat-file header may announce: a buffer that large is
// allocated before a byte of the object is read.
const maxObjectSize = 4 << 30

// CorruptObjectError is an object whose content does not hash to its ID.
type CorruptObjectError struct {
	OID, Type string
	Have      string // what the content hashes to
}

func (e *CorruptObjectError) Error() string {
	return fmt.Sprintf("object %s is corrupt: its content (%s) hashes to %s", e.OID, e.Type, e.Have)
}

// objectID is the ID git gives an object of type typ with content data: SHA-1 for a
// 40-hex repository, SHA-256 for a 64-hex one.
func objectID(typ string, data []byte, hexLen int) string {
	var h hash.Hash = sha1.New()
	if hexLen == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "%s %d\x00", typ, len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// noEOF turns an EOF in the middle of the output into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// InitBare creates a bare repository at dir (git init is safe to re-run).
func (g *Git) InitBare(ctx context.Context, dir string) error {
	_, err := g.exec(ctx, call{op: "init --bare " + dir, args: []string{"init", "-q", "--bare", dir}})
	return err
}

// SetConfig sets key to value in the repository at dir.
func (g *Git) SetConfig(ctx context.Context, dir, key, value string) error {
	_, err := g.exec(ctx, call{op: "config " + key, dir: dir, args: []string{"config", key, value}})
	return err
}

// DropPromisor removes the promisor remote that a filtered fetch from url (by URL, not
// by remote name) registers in the repository at dir, so that later reads report missing
// objects instead of fetching them one request each (git before 2.45 has no
// GIT_NO_LAZY_FETCH). A repository without it is left as it is.
func (g *Git) DropPromisor(ctx context.Context, dir, url string) error {
	_, err := g.exec(ctx, call{op: "config --remove-section", dir: dir, args: []string{"config", "--remove-section", "remote." + url}})
	var ge *Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "no such section") {
		return nil
	}
	return err
}

// URLError is an upstream URL mpspatch refuses (a scheme other than https, ssh, git or
// file; no host). Its message shows the URL with credentials redacted.
type URLError struct{ Msg string }

func (e *URLError) Error() string { return e.Msg }

func urlErrorf(format string, args ...any) error {
	return &URLError{Msg: fmt.Sprintf(format, args...)}
}

// scpLikeRE matches ssh's scp-like addresses (git@github.com:pytorch/pytorch.git).
var scpLikeRE = lazyregexp.New(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]`)

// CheckURL accepts https://, ssh://, git://, file:// URLs and scp-like ssh addresses
// (git@github.com:pytorch/pytorch.git); anything else (http://, ext::, a bare path) is
// refused with a *URLError naming the URL, credentials redacted. http:// (plain text) and
// ext:: (runs a command) are the cases this exists for.
func CheckURL(raw string) error {
	if scpLikeRE().MatchString(raw) {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return urlErrorf("upstream url %s: not a URL", RedactURL(raw))
	}
	switch u.Scheme {
	case "https", "ssh", "git", "file":
		if u.Scheme != "file" && u.Host == "" {
			return urlErrorf("upstream url %s: no host", RedactURL(raw))
		}
		if _, has := u.User.Password(); has && u.Scheme != "https" {
			// git hands "user:password" to ssh as the login name (ssh takes no password
			// from a URL), and git:// and file:// have no logins: the password would only
			// travel, in argv, .git/config and the log, without ever being used.
			return urlErrorf("upstream url %s: holds a password, which git cannot use over %s; remove it (ssh authenticates with a key or ssh-agent)", RedactURL(raw), u.Scheme)
		}
		return nil
	case "":
		return urlErrorf("upstream url %s: want https://, ssh://, git:// or file:// (or user@host:path)", RedactURL(raw))
	}
	return urlErrorf("upstream url %s: scheme %s is not allowed; want https, ssh, git or file", RedactURL(raw), u.Scheme)
}

// RedactURL hides the credentials of a URL: "https://user:token@host/x" becomes
// "https://***@host/x", whether or not net/url can parse it (redact.URL has the rule).
func RedactURL(raw string) string { return redact.URL(raw) }

// WithCredentials returns a Git that talks to rawURL's host with rawURL's credentials,
// and the URL without them. The credentials travel as an HTTP Authorization header set
// through the environment (GIT_CONFIG_*), so they appear in no command line (ps), no
// log, no error message and no .git/config. A URL without credentials, or not https,
// returns g and the URL unchanged.
func (g *Git) WithCredentials(rawURL string) (*Git, string) {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil || u.Scheme != "https" {
		return g, rawURL
	}
	user := u.User.Username()
	pass, _ := u.User.Password()
	u.User = nil
	clean := u.String()
	scope := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + "/"
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	ng := *g
	base := g.Env
	if base == nil {
		base = os.Environ()
	}
	ng.Env = withConfigEnv(base, "http."+scope+".extraHeader", header)
	return &ng, clean
}

// withConfigEnv adds one GIT_CONFIG_KEY_n/VALUE_n pair after those env already holds.
func withConfigEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+3)
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"GIT_CONFIG_COUNT="+strconv.Itoa(n+1),
		fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, key),
		fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, value))
}
