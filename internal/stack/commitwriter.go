package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// commitWriter records a rebase's cleanly applied patches as commits without starting
// git add, write-tree and commit-tree for each: it keeps the tree of the last rebased
// commit in memory (read once with ls-tree), hashes only the files a patch wrote (through
// git's own filters, so a blob is what git add would store), writes the changed
// directories' trees and the commit through git processes that live for the whole run
// (gitcli.ObjectWriter). Every object exists before its ID is returned, so the rebase
// state saved after a step never names a missing commit. The index is left behind (the
// caller stages what was written before it hands the tree to the author or finishes).
//
// Where it cannot be sure to write what git add, write-tree and commit-tree would (a
// symbolic link, core.fileMode or core.symlinks off, a commit encoding other than UTF-8,
// an author git would rewrite), it declines and the caller takes that route instead.
type commitWriter struct {
	g       *gitcli.Git
	tree    string // the work tree
	scratch string // a directory of the caller's for the commit file hash-object reads
	objs    *gitcli.ObjectWriter

	checked bool
	off     string // why the writer declines every step ("" when it does not)
	// crlf: git's CRLF conversion may apply (core.autocrlf on, or an attributes file that
	// may say text=auto). git add then keeps a CRLF file as it is where the index's version
	// of the path holds a CR and converts it where it holds none; hash-object, which the
	// writer hashes through, reads no index and always converts. The writer cannot tell
	// which git add would do, so under crlf it declines every step.
	crlf      bool
	committer string // "Name <email> epoch +zone", read once per run

	head string              // the commit whose tree dirs holds; "" when none is loaded
	dirs map[string]*treeDir // by path from the top; "" is the top
}

type treeDir struct {
	entries map[string]gitcli.TreeEntry // by name (Path holds the name)
	oid     string                      // "" while changed since it was read or written
}

func newCommitWriter(ctx context.Context, g *gitcli.Git, tree, scratch string) *commitWriter {
	return &commitWriter{g: g, tree: tree, scratch: scratch, objs: g.NewObjectWriter(ctx, tree)}
}

func (w *commitWriter) close() error { return w.objs.Close() }

// errDecline says the writer cannot record this step; the caller commits it through
// the index.
var errDecline = errors.New("declined")

// record writes the commit of parent's tree with the plan's changes (already written to
// the work tree) applied, with mm's author and date and message msg, and returns its ID.
// errDecline means nothing was written and the caller commits through the index.
func (w *commitWriter) record(ctx context.Context, root *os.Root, plan *series.Plan, parent string, mm mailMessage, msg string) (string, error) {
	if err := w.check(ctx, root); err != nil {
		return "", err
	}
	if w.off != "" {
		return "", errDecline
	}
	author, ok := authorLine(mm)
	if !ok || strings.ContainsRune(msg, 0) {
		return "", errDecline
	}
	if w.head != parent {
		if err := w.load(ctx, root, parent); err != nil {
			return "", err
		}
	}
	if w.crlf {
		return "", errDecline // a .gitattributes of the tree may say text=auto: see crlf
	}
	// Any way out but success leaves the model unlike parent's tree: read it again next time.
	w.head = ""
	for _, c := range plan.Changes {
		if _, name := splitTreePath(c.Path); name == ".gitattributes" && mayBeAuto(root, c.Path) {
			w.crlf = true // this step and every one after it: see crlf
			return "", errDecline
		}
		if !c.NewExists {
			if !w.remove(c.Path) {
				return "", errDecline
			}
			continue
		}
		fi, err := root.Lstat(c.Path)
		if err != nil {
			return "", fmt.Errorf("stage %s: %w", c.Path, err)
		}
		if !fi.Mode().IsRegular() {
			return "", errDecline // a symbolic link: git add stores its target, not the file it names
		}
		oid, err := w.objs.Blob(c.Path)
		if err != nil {
			return "", err
		}
		// git add's mode: the owner's execute bit decides.
		mode := "100644"
		if fi.Mode()&0o100 != 0 {
			mode = "100755"
		}
		if !w.set(c.Path, gitcli.TreeEntry{Mode: mode, Type: "blob", OID: oid}) {
			return "", errDecline
		}
	}
	tid, err := w.writeTree("")
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf("tree %s\nparent %s\nauthor %s\ncommitter %s\n\n%s", tid, parent, author, w.committer, msg)
	f, err := os.CreateTemp(w.scratch, "commit-*")
	if err != nil {
		return "", fmt.Errorf("write commit: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return "", fmt.Errorf("write commit: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write commit: %w", err)
	}
	sha, err := w.objs.Commit(f.Name())
	if err != nil {
		return "", err
	}
	w.head = sha
	return sha, nil
}

// check reads, once, what decides whether the writer can stand in for git.
func (w *commitWriter) check(ctx context.Context, root *os.Root) error {
	if w.checked {
		return nil
	}
	// The model's paths are from the top of the repository, the plan's from the tree:
	// the same only where the tree is the top (git's own .git is there).
	if _, err := root.Lstat(".git"); err != nil {
		w.off, w.checked = "the tree is not the top of its repository", true
		return nil
	}
	vals, err := w.g.ConfigValues(ctx, w.tree, "i18n.commitencoding", "core.filemode", "core.symlinks", "core.autocrlf", "core.attributesfile")
	if err != nil {
		return err
	}
	if autoCRLF(vals["core.autocrlf"]) || vals["core.attributesfile"] != "" ||
		mayBeAuto(root, ".git/info/attributes") || userAttributes(w.g.Env) {
		w.crlf = true
		w.off = "CRLF conversion may apply (core.autocrlf or an attributes file)"
	}
	switch enc := strings.ToLower(vals["i18n.commitencoding"]); {
	case enc != "" && enc != "utf-8" && enc != "utf8":
		w.off = "i18n.commitEncoding is " + enc // commit-tree writes an encoding header
	case isFalse(vals["core.filemode"]):
		w.off = "core.fileMode is off" // git add keeps the index's mode
	case isFalse(vals["core.symlinks"]):
		w.off = "core.symlinks is off"
	}
	if w.off == "" {
		if w.committer, err = w.g.CommitterIdent(ctx, w.tree); err != nil {
			return err
		}
		if !identLineRE.MatchString(w.committer) {
			w.off = "unexpected committer identity"
		}
	}
	w.checked = true
	return nil
}

func autoCRLF(v string) bool {
	switch strings.ToLower(v) {
	case "", "false", "no", "off", "0":
		return false
	}
	return true // true, input, or anything git may take for on
}

// mayBeAuto says whether the attributes file at name (in root) may set text=auto: it
// exists and says "auto", or it cannot be read as a small regular file. A file that is
// not there says nothing.
func mayBeAuto(root *os.Root, name string) bool {
	fi, err := root.Lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return true
	}
	data, err := root.ReadFile(name)
	return err != nil || strings.Contains(string(data), "auto")
}

// userAttributes says whether the user's own attributes file (git's default place for
// core.attributesFile) exists for git run with env (gitcli's Git.Env: nil means
// mpspatch's own environment); its rules may say text=auto for any path.
func userAttributes(env []string) bool {
	get := os.Getenv
	if env != nil {
		get = func(key string) string {
			for i := len(env) - 1; i >= 0; i-- {
				if v, ok := strings.CutPrefix(env[i], key+"="); ok {
					return v
				}
			}
			return ""
		}
	}
	dir := get("XDG_CONFIG_HOME")
	if dir == "" {
		home := get("HOME")
		if home == "" {
			return true
		}
		dir = home + "/.config"
	}
	_, err := os.Lstat(dir + "/git/attributes")
	return !errors.Is(err, os.ErrNotExist)
}

func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

var identLineRE = regexp.MustCompile(`^[^<>\n]+ <[^<>\n]*> [0-9]+ [+-][0-9]{4}$`)

// authorLine is the author line commit-tree writes for mm's name, email and date, when
// git would write them unchanged: no characters its identity code strips or refuses,
// and a date in format-patch's RFC 2822 form.
func authorLine(mm mailMessage) (string, bool) {
	if !cleanIdent(mm.Name) || !cleanIdent(mm.Email) {
		return "", false
	}
	f := strings.Fields(mm.Date)
	if len(f) == 0 {
		return "", false
	}
	zone := f[len(f)-1]
	if !zoneRE.MatchString(zone) {
		return "", false
	}
	t, err := time.Parse("Mon, 2 Jan 2006 15:04:05 -0700", mm.Date)
	if err != nil || t.Unix() < 0 || zone[3] > '5' {
		return "", false
	}
	if zone == "-0000" {
		zone = "+0000" // git writes no negative zero
	}
	return fmt.Sprintf("%s <%s> %d %s", mm.Name, mm.Email, t.Unix(), zone), true
}

var zoneRE = regexp.MustCompile(`^[+-][0-9]{4}$`)

// cleanIdent says git's identity code keeps s as it is: not empty, no crud at either end
// (git strips it), no angle bracket or newline inside (git drops them).
func cleanIdent(s string) bool {
	if s == "" || crud(s[0]) || crud(s[len(s)-1]) {
		return false
	}
	return !strings.ContainsAny(s, "<>\n\x00")
}

func crud(c byte) bool {
	return c <= ' ' || strings.IndexByte(".,:;<>\"\\'", c) >= 0
}

// load reads commit's whole tree into the model.
func (w *commitWriter) load(ctx context.Context, root *os.Root, commit string) error {
	entries, err := w.g.ReadTree(ctx, w.tree, commit)
	if err != nil {
		return err
	}
	w.dirs = map[string]*treeDir{"": {entries: map[string]gitcli.TreeEntry{}}}
	for _, e := range entries {
		full := e.Path
		dir, name := splitTreePath(full)
		d := w.dirs[dir]
		if d == nil {
			return fmt.Errorf("git ls-tree %s: %s listed before its directory", commit, e.Path)
		}
		e.Path = name
		d.entries[name] = e
		if name == ".gitattributes" && !w.crlf && mayBeAuto(root, full) {
			w.crlf = true
		}
		if e.Type == "tree" {
			w.dirs[full] = &treeDir{entries: map[string]gitcli.TreeEntry{}, oid: e.OID}
		}
	}
	w.head = commit
	return nil
}

func splitTreePath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

func joinTreePath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// set puts a file entry at path, making the directories it needs; false when a
// directory stands where a file goes or the other way round.
func (w *commitWriter) set(path string, e gitcli.TreeEntry) bool {
	dir, name := splitTreePath(path)
	if !w.mkdir(dir) {
		return false
	}
	d := w.dirs[dir]
	if old, ok := d.entries[name]; ok && old.Type == "tree" {
		return false
	}
	e.Path = name
	d.entries[name] = e
	w.touch(dir)
	return true
}

func (w *commitWriter) mkdir(dir string) bool {
	if w.dirs[dir] != nil {
		return true
	}
	parent, name := splitTreePath(dir)
	if !w.mkdir(parent) {
		return false
	}
	pd := w.dirs[parent]
	if _, ok := pd.entries[name]; ok {
		return false // a file (or a submodule) where the directory goes
	}
	pd.entries[name] = gitcli.TreeEntry{Mode: "040000", Type: "tree", Path: name}
	w.dirs[dir] = &treeDir{entries: map[string]gitcli.TreeEntry{}}
	w.touch(parent)
	return true
}

// remove drops the file at path and the directories that leave empty (a tree holds no
// empty directory).
func (w *commitWriter) remove(path string) bool {
	dir, name := splitTreePath(path)
	d := w.dirs[dir]
	if d == nil {
		return true
	}
	old, ok := d.entries[name]
	if !ok {
		return true
	}
	if old.Type == "tree" {
		return false
	}
	delete(d.entries, name)
	w.touch(dir)
	for dir != "" && len(w.dirs[dir].entries) == 0 {
		delete(w.dirs, dir)
		parent, name := splitTreePath(dir)
		delete(w.dirs[parent].entries, name)
		w.touch(parent)
		dir = parent
	}
	return true
}

// touch marks dir and every directory above it changed.
func (w *commitWriter) touch(dir string) {
	for {
		w.dirs[dir].oid = ""
		if dir == "" {
			return
		}
		dir, _ = splitTreePath(dir)
	}
}

// writeTree writes the changed trees at and below dir and returns dir's tree ID.
func (w *commitWriter) writeTree(dir string) (string, error) {
	d := w.dirs[dir]
	if d.oid != "" {
		return d.oid, nil
	}
	entries := make([]gitcli.TreeEntry, 0, len(d.entries))
	for name, e := range d.entries {
		if e.Type == "tree" {
			oid, err := w.writeTree(joinTreePath(dir, name))
			if err != nil {
				return "", err
			}
			e.OID = oid
			d.entries[name] = e
		}
		entries = append(entries, e)
	}
	oid, err := w.objs.Tree(entries)
	if err != nil {
		return "", err
	}
	d.oid = oid
	return oid, nil
}
