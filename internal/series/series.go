package series

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/mpspatch/mpspatch/internal/confined"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// OrderFile is the name of the file that lists the patches in apply order.
const OrderFile = "series"

// MaxPatchSize bounds one patch file; anything larger is refused before parsing.
const MaxPatchSize = 16 << 20

// MaxID is the largest patch ID: IDs have four digits (NNNN-slug.patch).
const MaxID = 9999

// MaxOrderSize bounds the series order file: a few thousand names fit in a fraction of it.
const MaxOrderSize = 1 << 20

// maxProblems bounds how many lint problems are listed: a file that is not a series at
// all (a symbolic link to a system file, say) must not be echoed back line by line.
const maxProblems = 50

// Series is a loaded, linted patch series.
type Series struct {
	// Source names where the series came from, for messages ("patches", "(embedded)").
	Source  string
	Patches []*Patch
	hash    string
}

// Patch is one NNNN-slug.patch mail.
type Patch struct {
	Name       string // file name, e.g. 0003-per-stream-locking.patch
	ID         int    // the permanent NNNN
	Slug       string
	SeriesLine int // line of the series file that lists it
	Raw        []byte

	Title    string
	Author   string
	Date     string
	Body     string
	Trailers []Trailer
	Files    []*gitdiff.File
}

// Trailer is one `Key: value` line of a patch body's trailer paragraph.
type Trailer struct {
	Key   string
	Value string
	Line  int // 1-based line in the patch file
}

// TrailerValues returns the trailers with key (case-insensitive), in order.
func (p *Patch) TrailerValues(key string) []Trailer {
	var out []Trailer
	for _, t := range p.Trailers {
		if strings.EqualFold(t.Key, key) {
			out = append(out, t)
		}
	}
	return out
}

// Paths returns every tree path the patch reads or writes, in patch order, deduplicated.
func (p *Patch) Paths() []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range p.Files {
		for _, n := range []string{f.OldName, f.NewName} {
			if n != "" && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// Hash identifies the series content: the order and every patch's bytes.
func (s *Series) Hash() string { return s.hash }

// Problem is one lint finding, with its position.
type Problem struct {
	File string
	Line int // 0 when the problem concerns the whole file
	Msg  string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// LintError lists every problem Load found. The series is unusable while it has any.
type LintError struct {
	Source   string
	Problems []Problem
}

func (e *LintError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "series %s: %d problem", e.Source, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// The regular expressions are compiled on first use, not at start-up: every command
// links this package, and most (version, help, doctor) never load a series.
var (
	nameRE    = lazyregexp.New(`^([0-9]{4})-([a-z0-9]+(?:-[a-z0-9]+)*)\.patch$`)
	trailerRE = lazyregexp.New(`^([A-Za-z][A-Za-z0-9-]*): (.*)$`)
	testRefRE = lazyregexp.New(`^(?:verify/suites/)?(test_[A-Za-z0-9_]+\.py|bench_[A-Za-z0-9_]+\.py)(?:::([A-Za-z_][A-Za-z0-9_]*))?$`)
)

// Load reads dir/series and every patch from fsys, lints them, and returns the series.
// On any problem it returns a *LintError listing all of them (and no series).
func Load(fsys fs.FS, dir, source string) (*Series, error) {
	return LoadContext(context.Background(), fsys, dir, source)
}

// LoadContext is Load that stops between files once ctx is done, returning ctx's error:
// an interrupted command must not go on reading a series of thousands of patches.
func LoadContext(ctx context.Context, fsys fs.FS, dir, source string) (*Series, error) {
	l := &loader{ctx: ctx, fsys: fsys, dir: dir, s: &Series{Source: source}}
	l.load()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load series %s: %w", source, err)
	}
	if len(l.problems) > 0 {
		return nil, &LintError{Source: source, Problems: l.problems}
	}
	l.s.hash = l.hashSeries()
	return l.s, nil
}

type loader struct {
	ctx       context.Context
	fsys      fs.FS
	dir       string
	s         *Series
	problems  []Problem
	order     []byte
	mentioned map[string]bool // names on series lines, well formed or not
}

func (l *loader) problem(file string, line int, format string, args ...any) {
	l.problems = append(l.problems, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// readBounded reads name from the series directory: a regular file of at most limit
// bytes. A directory on disk is a *PatchDir, which reads as every patch input is read
// (input.go). Any other fs.FS (the series embedded in the binary, a format-patch
// directory normalised in memory) is stat-ed before it is opened: a FIFO would block the
// read forever and a device (a link to /dev/zero) would never end, so anything but a
// regular file is refused before it is opened.
func (l *loader) readBounded(name string, limit int64) ([]byte, error) {
	if d, ok := l.fsys.(*PatchDir); ok {
		data, err := d.ReadFile(l.join(name), limit)
		return data, errOrUnwrapped(err)
	}
	fi, err := fs.Stat(l.fsys, l.join(name))
	if err != nil {
		return nil, errOrUnwrapped(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, confined.NotRegular(fi.Mode())
	}
	if fi.Size() > limit {
		return nil, tooLarge(limit)
	}
	f, err := l.fsys.Open(l.join(name))
	if err != nil {
		return nil, errOrUnwrapped(err)
	}
	defer f.Close()
	return readSized(f, fi.Size(), limit)
}

func errOrUnwrapped(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// clip shortens a line quoted in a message.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (l *loader) join(name string) string {
	if l.dir == "" || l.dir == "." {
		return name
	}
	return path.Join(l.dir, name)
}

func (l *loader) load() {
	order, err := l.readBounded(OrderFile, MaxOrderSize)
	if err != nil {
		l.problem(OrderFile, 0, "cannot read the order file: %v", err)
		return
	}
	l.order = order
	listed := l.parseOrder(order)

	// Every *.patch in the directory must be listed: a forgotten patch is an error.
	entries, err := fs.ReadDir(l.fsys, l.dirOrDot())
	if err != nil {
		l.problem(l.dirOrDot(), 0, "cannot list the directory: %v", err)
		return
	}
	var unlisted []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".patch") && !listed[e.Name()] && !l.mentioned[e.Name()] {
			unlisted = append(unlisted, e.Name())
		}
	}
	sort.Strings(unlisted)
	for _, n := range unlisted {
		l.problem(n, 0, "patch file is not listed in %s (add it, or delete the file)", OrderFile)
	}
	for _, p := range l.s.Patches {
		if l.ctx != nil && l.ctx.Err() != nil {
			return
		}
		l.loadPatch(p)
	}
}

func (l *loader) dirOrDot() string {
	if l.dir == "" {
		return "."
	}
	return l.dir
}

// parseOrder reads the series file: names, comments, blank lines.
func (l *loader) parseOrder(order []byte) map[string]bool {
	listed := map[string]bool{}
	l.mentioned = map[string]bool{}
	ids := map[int]int{} // ID -> series line
	sc := bufio.NewScanner(bytes.NewReader(order))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(l.problems) >= maxProblems {
			l.problem(OrderFile, line, "too many problems; stopped reading (is this a series file?)")
			break
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		l.mentioned[strings.Fields(text)[0]] = true
		if strings.ContainsAny(text, " \t") {
			// quilt allows options after the name (-p1); we do not, say so plainly.
			l.problem(OrderFile, line, "want one patch file name per line, have %q", clip(text))
			continue
		}
		m := nameRE().FindStringSubmatch(text)
		if m == nil {
			l.problem(OrderFile, line, "%q: want a name of the form NNNN-slug.patch (four digits, lowercase slug of letters, digits and dashes)", clip(text))
			continue
		}
		if listed[text] {
			l.problem(OrderFile, line, "%s is listed twice", text)
			continue
		}
		id, _ := strconv.Atoi(m[1])
		if prev, dup := ids[id]; dup {
			l.problem(OrderFile, line, "ID %s is already used on line %d; IDs are permanent and unique", m[1], prev)
			continue
		}
		ids[id] = line
		listed[text] = true
		l.s.Patches = append(l.s.Patches, &Patch{Name: text, ID: id, Slug: m[2], SeriesLine: line})
	}
	if err := sc.Err(); err != nil {
		l.problem(OrderFile, line+1, "read: %v", err)
	}
	return listed
}

func (l *loader) loadPatch(p *Patch) {
	raw, err := l.readBounded(p.Name, MaxPatchSize)
	if err != nil {
		l.problem(OrderFile, p.SeriesLine, "%s is listed but cannot be read: %v", p.Name, err)
		return
	}
	p.Raw = raw
	for _, prob := range ParsePatch(p) {
		l.problems = append(l.problems, prob)
	}
}

// ParsePatch parses p.Raw into p's header, trailers and files, and returns the problems
// found. It never panics on any input.
func ParsePatch(p *Patch) []Problem {
	var probs []Problem
	add := func(line int, format string, args ...any) {
		probs = append(probs, Problem{File: p.Name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	raw := p.Raw
	if starts := mailStarts(raw); len(starts) > 1 {
		add(starts[1], "holds %d mails (starting on lines %s); split them into one NNNN-slug.patch each — mpspatch never merges them", len(starts), joinInts(starts))
		return probs
	}
	if bytes.IndexByte(raw, 0) >= 0 && !bytes.Contains(raw, []byte("GIT binary patch")) {
		add(0, "contains NUL bytes; want a text git format-patch mail")
		return probs
	}
	files, preamble, err := gitdiff.Parse(bytes.NewReader(raw))
	if err != nil {
		add(lineOfParseError(err), "parse diff: %v", err)
		return probs
	}
	if ln := unterminatedHunkLine(raw, files); ln > 0 {
		add(ln, "the diff's last line ends without a newline and no `\\ No newline at end of file` line follows it: git apply calls this a corrupt patch; want a newline at the end of the line, or the marker line after it")
		return probs
	}
	if len(files) == 0 {
		if ln := edStyleLine(raw); ln > 0 {
			add(ln, "looks like an ed-style or normal diff; only unified git diffs are accepted (git format-patch)")
		} else if ln := contextDiffLine(raw); ln > 0 {
			add(ln, "looks like a context diff (*** / ---); only unified git diffs are accepted (git format-patch)")
		} else {
			add(0, "no unified diff found; want a git format-patch mail with a `diff --git` section")
		}
		return probs
	}
	p.Files = files
	hdr, err := gitdiff.ParsePatchHeader(preamble)
	if err != nil {
		add(1, "mail header: %v; want From:, Date: and Subject: headers as git format-patch writes them", err)
		return probs
	}
	if hdr.Author == nil {
		add(headerLine(raw, "From:"), "missing From: header (want \"Name <email>\")")
	} else {
		p.Author = hdr.Author.String()
	}
	if hdr.AuthorDate.IsZero() {
		add(headerLine(raw, "Date:"), "missing or unreadable Date: header")
	} else {
		p.Date = hdr.AuthorDate.UTC().Format("2006-01-02T15:04:05Z")
	}
	if strings.TrimSpace(hdr.Title) == "" {
		add(headerLine(raw, "Subject:"), "missing Subject: header")
	} else if subjectBreaks(raw, hdr.Title) {
		add(headerLine(raw, "Subject:"), "Subject: holds a line break once decoded (an encoded =0A or =0D); want a subject of one line")
	}
	p.Title = hdr.Title
	p.Body = hdr.Body
	p.Trailers = parseTrailers(raw, hdr.Body)
	for _, t := range p.Trailers {
		switch strings.ToLower(t.Key) {
		case "intent":
			if strings.TrimSpace(t.Value) == "" {
				add(t.Line, "empty Intent: trailer")
			}
		case "series-id":
			// apply --commit's marker on a commit; export and import remove it.
			add(t.Line, "Series-Id: %s: that trailer belongs on a commit, never in a patch file (the ID is the file name's); run mpspatch export, or delete the line", t.Value)
		case "test":
			if !testRefRE().MatchString(strings.TrimSpace(t.Value)) {
				add(t.Line, "Test: %q: want FILE.py::NAME, a test in verify/suites/ (for example test_linear.py::test_linear_variants)", t.Value)
			}
		}
	}
	for i, f := range files {
		for _, prob := range checkFile(f) {
			add(diffLine(raw, f, i), "%s", prob)
		}
	}
	// Prefixes last, and only for a patch with no other problem: a hostile path (an
	// absolute rename target, say) also makes the headers disagree, and is said better
	// above.
	if len(probs) == 0 {
		st, heads, err := DiffPrefixes(raw)
		var pe *PrefixError
		switch {
		case errors.As(err, &pe):
			add(pe.Line, "%s", pe.Msg)
		case err == nil && st != GitDefault && len(heads) > 0:
			add(heads[0].Line, "the diff names its paths with prefixes %q and %q, not a/ and b/ (written with diff.noprefix or diff.mnemonicPrefix?); read as git apply -p1 reads them it would patch other files: `mpspatch import` rewrites such a mail", st.Src, st.Dst)
		}
	}
	return probs
}

// subjectBreaks says whether the mail's subject holds a line break once its RFC 2047
// encoded words are decoded, as go-gitdiff decodes them (title) or as a mail reader does:
// a subject that decodes to two lines would put text of its choosing where a commit's
// message or a mail's next header goes.
func subjectBreaks(raw []byte, title string) bool {
	if strings.ContainsAny(title, "\r\n") {
		return true
	}
	var value string
	in := false
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSuffix(l, "\r")
		switch {
		case l == "":
			return strings.ContainsAny(decodeWords(value), "\r\n")
		case in && (l[0] == ' ' || l[0] == '\t'):
			value += l
		default:
			k, v, ok := strings.Cut(l, ":")
			in = ok && strings.EqualFold(k, "Subject")
			if in {
				value = v
			}
		}
	}
	return strings.ContainsAny(decodeWords(value), "\r\n")
}

func decodeWords(s string) string {
	if d, err := wordDecoder.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

var wordDecoder mime.WordDecoder

// unterminatedHunkLine returns the line number of raw's last line when it belongs to a
// hunk and ends without a newline that no `\ No newline at end of file` marker accounts
// for, and 0 otherwise. go-gitdiff reads such a line as one without a newline, so the
// engine would write a file without its last newline that the patch never asked for
// (git apply refuses the patch as corrupt). The line is a hunk's when terminating it
// changes what the hunks hold; a signature or a marker line left unterminated does not.
func unterminatedHunkLine(raw []byte, files []*gitdiff.File) int {
	if len(raw) == 0 || raw[len(raw)-1] == '\n' {
		return 0
	}
	again, _, err := gitdiff.Parse(bytes.NewReader(append(raw[:len(raw):len(raw)], '\n')))
	if err == nil && len(again) == len(files) {
		same := true
		for i := range files {
			if !sameFragments(files[i].TextFragments, again[i].TextFragments) {
				same = false
				break
			}
		}
		if same {
			return 0
		}
	}
	return bytes.Count(raw, []byte("\n")) + 1
}

func sameFragments(a, b []*gitdiff.TextFragment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i].Lines) != len(b[i].Lines) {
			return false
		}
		for j := range a[i].Lines {
			if a[i].Lines[j] != b[i].Lines[j] {
				return false
			}
		}
	}
	return true
}

// checkFile refuses what the engine never applies: hostile paths, symlinks, submodules,
// oversized binaries.
func checkFile(f *gitdiff.File) []string {
	var out []string
	for i, n := range []string{f.OldName, f.NewName} {
		if n == "" || (i == 1 && n == f.OldName) {
			continue
		}
		if err := CheckPath(n); err != nil {
			out = append(out, err.Error())
		}
	}
	if f.OldName == "" && f.NewName == "" {
		out = append(out, "file diff names no path")
	}
	for _, m := range []fs.FileMode{f.OldMode, f.NewMode} {
		switch {
		case m == 0:
		case m&fs.ModeSymlink != 0 || m == 0o120000:
			out = append(out, fmt.Sprintf("%s: symbolic links are refused (mode %o)", displayName(f), m))
		case m == 0o160000 || m&fs.ModeType != 0:
			out = append(out, fmt.Sprintf("%s: only regular files are supported (mode %o)", displayName(f), m))
		}
	}
	if f.IsBinary {
		if f.BinaryFragment == nil {
			out = append(out, fmt.Sprintf("%s: binary change without data (\"Binary files differ\"); export with --binary", displayName(f)))
		} else if f.BinaryFragment.Size > MaxBinarySize {
			out = append(out, fmt.Sprintf("%s: binary patch of %d bytes exceeds the %d byte limit", displayName(f), f.BinaryFragment.Size, MaxBinarySize))
		}
	}
	for i, frag := range f.TextFragments {
		if err := frag.Validate(); err != nil {
			out = append(out, fmt.Sprintf("%s hunk %d/%d: %v", displayName(f), i+1, len(f.TextFragments), err))
		}
	}
	return out
}

// MaxBinarySize bounds the decoded size of a binary patch.
const MaxBinarySize = 1 << 20

// displayName names f's path for a message, quoted as git quotes it.
func displayName(f *gitdiff.File) string {
	if f.NewName != "" {
		return QuotePath(f.NewName)
	}
	return QuotePath(f.OldName)
}

// mailStarts returns the 1-based lines where a format-patch mail begins.
func mailStarts(raw []byte) []int {
	var starts []int
	line := 0
	for len(raw) > 0 {
		line++
		i := bytes.IndexByte(raw, '\n')
		var l []byte
		if i < 0 {
			l, raw = raw, nil
		} else {
			l, raw = raw[:i], raw[i+1:]
		}
		if isMailStart(bytes.TrimSuffix(l, []byte("\r"))) {
			starts = append(starts, line)
		}
	}
	return starts
}

// isMailStart matches the line git format-patch starts a mail with,
// "From <40 hex digits> Mon Sep 17 00:00:00 2001", without a regular expression: it runs
// on every line of every patch.
func isMailStart(l []byte) bool {
	const head, tail = "From ", " Mon Sep 17 00:00:00 2001"
	if len(l) != len(head)+40+len(tail) || !bytes.HasPrefix(l, []byte(head)) || !bytes.HasSuffix(l, []byte(tail)) {
		return false
	}
	for _, c := range l[len(head) : len(head)+40] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

var (
	edRE           = lazyregexp.New(`^[0-9]+(,[0-9]+)?[acd][0-9]+(,[0-9]+)?$`)
	contextRE      = lazyregexp.New(`^\*\*\* [0-9]+(,[0-9]+)? \*\*\*\*$`)
	parseErrLineRE = lazyregexp.New(`line (\d+)`)
)

func edStyleLine(raw []byte) int     { return firstMatchingLine(raw, edRE()) }
func contextDiffLine(raw []byte) int { return firstMatchingLine(raw, contextRE()) }

func firstMatchingLine(raw []byte, re *regexp.Regexp) int {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), MaxPatchSize)
	n := 0
	for sc.Scan() {
		n++
		if re.MatchString(strings.TrimRight(sc.Text(), "\r")) {
			return n
		}
	}
	return 0
}

// headerLine finds the line of a mail header, or 1 when it is absent.
func headerLine(raw []byte, prefix string) int {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), MaxPatchSize)
	n := 0
	for sc.Scan() {
		n++
		if strings.HasPrefix(sc.Text(), prefix) {
			return n
		}
		if sc.Text() == "" {
			break
		}
	}
	return 1
}

// diffLine finds the line where the i-th file's diff starts: its `diff --git` line, or
// for a plain unified diff its `--- ` line.
func diffLine(raw []byte, f *gitdiff.File, i int) int {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), MaxPatchSize)
	n, seen, prevGit := 0, -1, false
	for sc.Scan() {
		n++
		text := sc.Text()
		isGit := strings.HasPrefix(text, "diff --git ")
		// A `--- ` header that follows a `diff --git` line belongs to it.
		if isGit || (strings.HasPrefix(text, "--- ") && !prevGit && n > 1) {
			seen++
			if seen == i {
				return n
			}
		}
		if isGit {
			prevGit = true
		} else if strings.HasPrefix(text, "+++ ") {
			prevGit = false
		}
	}
	return 0
}

// lineOfParseError extracts the line number go-gitdiff puts in its messages ("gitdiff: line 12: ...").
func lineOfParseError(err error) int {
	m := parseErrLineRE().FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// parseTrailers reads the trailer paragraph (the last paragraph of the body whose every
// line is `Key: value`) and finds each trailer's line in the raw mail.
func parseTrailers(raw []byte, body string) []Trailer {
	body = strings.TrimRight(body, "\n")
	paras := strings.Split(body, "\n\n")
	last := strings.TrimSpace(paras[len(paras)-1])
	if last == "" {
		return nil
	}
	var out []Trailer
	for _, l := range strings.Split(last, "\n") {
		m := trailerRE().FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			return nil // not a trailer paragraph
		}
		out = append(out, Trailer{Key: m[1], Value: strings.TrimSpace(m[2])})
	}
	// Locate each trailer line in the raw mail, before the `---` that starts the diffstat.
	lines := strings.Split(string(raw), "\n")
	from := 0
	for i := range out {
		want := out[i].Key + ": "
		for j := from; j < len(lines); j++ {
			if lines[j] == "---" {
				break
			}
			if strings.HasPrefix(strings.TrimSpace(lines[j]), want) && strings.Contains(lines[j], out[i].Value) {
				out[i].Line = j + 1
				from = j + 1
				break
			}
		}
	}
	return out
}

func (l *loader) hashSeries() string {
	h := sha256.New()
	h.Write(l.order)
	for _, p := range l.s.Patches {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", p.Name, len(p.Raw))
		h.Write(p.Raw)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Identity returns the hash and patch count of the series in dir, as Load's Hash and
// len(Patches) would, without parsing the mails: `mpspatch version` prints the identity of
// the built-in series on every call, and parsing seventeen patches would be most of its
// cost. A series whose order file does not lint, or lists a file it cannot read, is an
// error, as with Load.
func Identity(fsys fs.FS, dir string) (string, int, error) {
	l := &loader{fsys: fsys, dir: dir, s: &Series{}}
	order, err := l.readBounded(OrderFile, MaxOrderSize)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", OrderFile, err)
	}
	l.order = order
	l.parseOrder(order)
	// The patches stream through the hash, each file's length taken from its stat, so
	// nothing is copied into a buffer of its size (for the embedded series that was most of
	// the command's heap, and of its page faults).
	h := sha256.New()
	h.Write(order)
	buf := make([]byte, 16<<10)
	for _, p := range l.s.Patches {
		if err := l.hashPatch(h, p, buf); err != nil {
			l.problem(OrderFile, p.SeriesLine, "%s is listed but cannot be read: %v", p.Name, err)
		}
	}
	if len(l.problems) > 0 {
		return "", 0, &LintError{Problems: l.problems}
	}
	return hex.EncodeToString(h.Sum(nil)), len(l.s.Patches), nil
}

// hashPatch writes p into h as hashSeries does (name, length, bytes), streaming the file
// through buf, with readBounded's checks. The length is written before the bytes are read,
// so a file whose length differs from its stat (it changed meanwhile) is an error.
func (l *loader) hashPatch(h io.Writer, p *Patch, buf []byte) error {
	name := l.join(p.Name)
	fi, err := fs.Stat(l.fsys, name)
	if err != nil {
		return errOrUnwrapped(err)
	}
	if !fi.Mode().IsRegular() {
		return confined.NotRegular(fi.Mode())
	}
	if fi.Size() > MaxPatchSize {
		return fmt.Errorf("larger than %d MiB; refusing to read it", MaxPatchSize>>20)
	}
	f, err := l.fsys.Open(name)
	if err != nil {
		return errOrUnwrapped(err)
	}
	defer f.Close()
	fmt.Fprintf(h, "\x00%s\x00%d\x00", p.Name, fi.Size())
	n, err := io.CopyBuffer(h, io.LimitReader(onlyReader{f}, fi.Size()+1), buf)
	if err != nil {
		return err
	}
	if n != fi.Size() {
		return fmt.Errorf("read %d bytes where its stat said %d (did it change?)", n, fi.Size())
	}
	return nil
}

// onlyReader hides every method but Read, so io.CopyBuffer uses the buffer it is given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }
