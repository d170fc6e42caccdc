package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/series"
)

var (
	anyFromRE     = lazyregexp.New(`^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n`)
	signatureRE   = lazyregexp.New(`\n-- \n[^\n]*\n(?:\n)*$`)
	shortIndexRE  = lazyregexp.New(`(?m)^index [0-9a-f]{1,39}\.\.[0-9a-f]{1,39}`)
	subjectLineRE = lazyregexp.New(`(?m)^Subject: .*\n(?:[ \t].*\n)*`)
)

// Mail is one patch mail read by ReadMails, with where it came from.
type Mail struct {
	Source string // file name, or "MBOX mail N"
	File   string // the path of the file it was read from
	Raw    []byte
}

// errorf names m in err: its file, and which mail of it.
func (m Mail) errorf(err error) error {
	if base := filepath.Base(m.File); m.Source != base {
		err = fmt.Errorf("%s: %w", strings.TrimPrefix(m.Source, base+" "), err)
	}
	return &series.InputError{Path: m.File, Err: err}
}

// ReadMails reads the mails of src: a directory of *.patch files (in the order of its
// `series` file when it has one, else by name, as git format-patch numbers them) or an
// mbox file holding several mails. Every file is read through series.PatchDir or
// series.ReadPatchFile (regular files only, never through a link inside the directory,
// bounded), and ctx is checked between files.
func ReadMails(ctx context.Context, src string) ([]Mail, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		data, err := series.ReadPatchFile(src, series.MaxImportSize)
		if err != nil {
			return nil, err
		}
		out, err := mailsOf(data, src, true)
		if err != nil {
			return nil, err
		}
		if len(out) == 0 {
			return nil, &series.InputError{Path: src, Err: errors.New("no mail found (want `From <sha> Mon Sep 17 00:00:00 2001` lines, as git format-patch writes)")}
		}
		return out, nil
	}
	pd, err := series.OpenPatchDir(src)
	if err != nil {
		return nil, err
	}
	defer pd.Close()
	return readDirMails(ctx, pd)
}

// readDirMails reads the mails of a directory of *.patch files.
func readDirMails(ctx context.Context, pd *series.PatchDir) ([]Mail, error) {
	src := pd.Name()
	sd, err := readPatchDir(ctx, pd)
	if err != nil {
		return nil, err
	}
	names := sd.names
	if !sd.exists {
		for n := range sd.files {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	var out []Mail
	for _, n := range names {
		data, ok := sd.files[n]
		if !ok {
			return nil, &series.InputError{Path: filepath.Join(src, series.OrderFile), Err: fmt.Errorf("%s is listed but missing", n)}
		}
		mails, err := mailsOf(data, filepath.Join(src, n), false)
		if err != nil {
			return nil, err
		}
		out = append(out, mails...)
	}
	if len(out) == 0 {
		return nil, &series.InputError{Path: src, Err: errors.New("no *.patch files")}
	}
	return out, nil
}

// mailsOf cuts data, read from the file at path, into its mails. A file without a
// `From <sha>` line is one mail, unless it is an mbox (mbox), which must have them. Each
// mail is bounded as a patch file is.
func mailsOf(data []byte, path string, mbox bool) ([]Mail, error) {
	mails := splitMbox(data)
	if len(mails) == 0 && !mbox {
		mails = [][]byte{data}
	}
	name := filepath.Base(path)
	var out []Mail
	for i, m := range mails {
		source := name
		if mbox || len(mails) > 1 {
			source = fmt.Sprintf("%s mail %d", name, i+1)
		}
		if len(m) > series.MaxPatchSize {
			return nil, &series.InputError{Path: path, Err: fmt.Errorf("mail %d is larger than %d MiB, the limit of one patch", i+1, series.MaxPatchSize>>20)}
		}
		out = append(out, Mail{Source: source, File: path, Raw: m})
	}
	return out, nil
}

// NormaliseMail rewrites a mail into the series' canonical form and says what it
// changed: the From line carries the zero SHA, the subject prefix is `[PATCH]` (no
// n/m, no version), on one line, and the version signature is gone.
//
// Only the mail's own layers are undone (mailcode.go): its CRLF line ends when its first
// line has one, and a quoted-printable or base64 body. The diff's bytes, the CRs of a CRLF
// file among them, are kept exactly.
func NormaliseMail(raw []byte) ([]byte, string, []string, error) {
	var notes []string
	out := raw
	if mailLineEndsCRLF(raw) {
		out = stripMailCR(raw)
		notes = append(notes, "the mail's CRLF line ends made LF (one CR a line; CRs of the diff's content kept)")
	}
	if loc := anyFromRE().FindIndex(out); loc != nil && loc[0] == 0 {
		if !bytes.HasPrefix(out, []byte(zeroFrom)) {
			notes = append(notes, "commit SHA on the From line replaced by zeros")
			out = append([]byte(zeroFrom), out[loc[1]:]...)
		}
	} else {
		notes = append(notes, "mbox From line added")
		out = append([]byte(zeroFrom), out...)
	}
	out, enc, err := decodeTransfer(out)
	if err != nil {
		return nil, "", nil, err
	}
	if enc != "" {
		notes = append(notes, enc+" body decoded (8bit)")
	}
	mm, err := parseMailMessage(out)
	if err != nil {
		return nil, "", nil, err
	}
	parts, _ := splitMail(out)
	if loc := subjectLineRE().FindIndex(parts.header); loc != nil {
		old := string(parts.header[loc[0]:loc[1]])
		want := subjectHeader(mm.Subject)
		if old != want {
			if strings.Contains(strings.SplitN(old, "]", 2)[0], "/") || !strings.HasPrefix(old, "Subject: [PATCH] ") {
				notes = append(notes, "subject prefix made [PATCH]")
			} else {
				notes = append(notes, "subject folded as git format-patch folds it")
			}
			parts.header = append(append(append([]byte{}, parts.header[:loc[0]]...), want...), parts.header[loc[1]:]...)
		}
	}
	out = parts.bytes()
	if loc := signatureRE().FindIndex(out); loc != nil {
		notes = append(notes, "signature removed")
		out = append(out[:loc[0]:loc[0]], '\n')
	}
	// A mail written with diff.noprefix (or mnemonic prefixes) names its paths without
	// a/ b/: read as -p1 it would patch the wrong files, so its headers are rewritten.
	st, heads, err := series.DiffPrefixes(out)
	if err != nil {
		return nil, "", nil, err
	}
	if st != series.GitDefault {
		out = series.RewritePrefixes(out, st, heads)
		if st.Src == "" {
			notes = append(notes, "paths had no a/ b/ prefixes (diff.noprefix): added")
		} else {
			notes = append(notes, fmt.Sprintf("path prefixes %s %s made a/ b/", st.Src, st.Dst))
		}
	}
	if shortIndexRE().Match(out) {
		notes = append(notes, "index lines carry abbreviated blob IDs (apply --commit and export to get full ones)")
	}
	return out, mm.Subject, notes, nil
}

// subjectHeader writes the Subject: header of a normalised mail exactly as git
// format-patch writes it for this subject, so that import and a later export make the
// same bytes: plain text wrapped at word boundaries into lines of at most 78 columns
// (continuation lines start with one space), or, for a subject that needs RFC 2047,
// Q-encoded words (encodeSubject).
// TestSubjectHeaderMatchesGit checks both against git format-patch.
func subjectHeader(subject string) string {
	const prefix = "Subject: [PATCH] "
	if needsEncodedWords(subject) {
		return prefix + encodeSubject(subject, len(prefix)) + "\n"
	}
	var b strings.Builder
	b.WriteString(prefix)
	col := len(prefix)
	for i, w := range strings.Split(subject, " ") {
		switch {
		case i == 0 && col+len(w) > 78:
			// A first word too long for the first line goes to the next one, after
			// the prefix's own space, as git breaks it.
			b.WriteString("\n ")
			col = 0
		case i == 0:
			col--
		case col+1+len(w) > 78:
			b.WriteString("\n ")
			col = 0
		default:
			b.WriteByte(' ')
		}
		b.WriteString(w)
		col += 1 + len(w)
	}
	b.WriteByte('\n')
	return b.String()
}

// changeKey identifies the change a mail makes: its diff with the index lines (blob
// IDs, abbreviated or full) left out. Two mails with the same key change the same lines
// at the same places of the same files.
func changeKey(mail []byte) string {
	i := bytes.Index(mail, []byte("\ndiff --git "))
	if i < 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(mail[i+1:]), "\n") {
		if !strings.HasPrefix(l, "index ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// ImportOptions say what to import where.
type ImportOptions struct {
	Src   string
	Dir   string
	Check bool // compute, write nothing
}

// Imported is one mail's new home.
type Imported struct {
	Source  string   `json:"source"`
	Name    string   `json:"file"`
	Subject string   `json:"subject"`
	Notes   []string `json:"normalised,omitempty"`
}

// ImportResult is the outcome of Import.
type ImportResult struct {
	Dir     string     `json:"dir"`
	Patches []Imported `json:"patches"`
	// Skipped names the cover letters left out: mails with no diff that git
	// format-patch --cover-letter writes as 0000-cover-letter.patch ("[PATCH 0/N]").
	Skipped []string `json:"skipped,omitempty"`
}

// coverSubjectRE matches a cover letter's numbered subject prefix: [PATCH 0/3],
// [RFC PATCH v2 00/12].
var coverSubjectRE = lazyregexp.New(`(?m)^Subject: \[[^\]]*\b0+/[0-9]+\]`)

// isCoverLetter says whether a mail is a series' cover letter rather than a patch: it
// holds no diff, and git format-patch named it 0000-cover-letter.patch or numbered it 0/N.
func isCoverLetter(m Mail) bool {
	if bytes.Contains(m.Raw, []byte("\ndiff --git ")) {
		return false
	}
	return strings.HasPrefix(filepath.Base(m.Source), "0000-cover-letter.patch") || coverSubjectRE().Match(m.Raw)
}

// Import appends the mails of opts.Src to the series in opts.Dir as new entries with the
// next free IDs, normalised names and headers.
func Import(ctx context.Context, opts ImportOptions) (*ImportResult, error) {
	mails, err := ReadMails(ctx, opts.Src)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	sd, err := readSeriesDir(ctx, opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	res := &ImportResult{Dir: opts.Dir}
	next := sd.maxID()
	names := append([]string{}, sd.names...)
	files := map[string][]byte{}
	// The diffs the series already holds: importing the same mails twice is refused, as
	// quilt import refuses a name the series has, instead of appending duplicates.
	have := map[string]string{}
	for _, n := range sd.names {
		if d := changeKey(sd.files[n]); d != "" {
			have[d] = n
		}
	}
	for _, m := range mails {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if isCoverLetter(m) {
			res.Skipped = append(res.Skipped, m.Source)
			continue
		}
		out, subject, notes, err := NormaliseMail(m.Raw)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", m.Source, err)
		}
		key := changeKey(out)
		if prev, dup := have[key]; dup && key != "" {
			return nil, fmt.Errorf("import %s: %s already holds the same change as %s; nothing imported (remove that entry first to replace it)", m.Source, opts.Dir, prev)
		}
		have[key] = m.Source
		// A mail exported from a commit apply --commit made may still carry its Series-Id
		// (an older mpspatch, or git format-patch by hand): the ID is the series file's
		// business, never the patch's.
		if parts, err := splitMail(out); err == nil {
			if body, id := stripSeriesID(parts.body); id != 0 {
				parts.body = body
				out = parts.bytes()
				notes = append(notes, fmt.Sprintf("%s: %04d trailer dropped", TrailerKey, id))
			}
		}
		p := &series.Patch{Name: "import", Raw: out}
		if probs := series.ParsePatch(p); len(probs) > 0 {
			return nil, fmt.Errorf("import %s: %s", m.Source, strings.TrimPrefix(probs[0].String(), "import"))
		}
		if next >= series.MaxID {
			return nil, fmt.Errorf("import %s: no ID left for it: the series in %s already uses or retired ID %04d, and IDs have four digits (0001-%04d) and are never reused; nothing was written",
				m.Source, opts.Dir, next, series.MaxID)
		}
		next++
		name := fmt.Sprintf("%04d-%s.patch", next, slugify(subject))
		files[name] = out
		names = append(names, name)
		res.Patches = append(res.Patches, Imported{Source: m.Source, Name: name, Subject: subject, Notes: notes})
	}
	if opts.Check {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	for _, im := range res.Patches {
		if err := atomicfile.WriteBytes(filepath.Join(opts.Dir, im.Name), files[im.Name], atomicfile.Options{}); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
	}
	header := sd.header
	if !sd.exists {
		header = defaultHeader
	}
	if err := atomicfile.WriteBytes(filepath.Join(opts.Dir, series.OrderFile), orderFile(header, names, sd.retired), atomicfile.Options{}); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	return res, nil
}

// LooksLikeFormatPatchDir says whether pd is plain `git format-patch` output rather
// than a series: no `series` entry, and *.patch files.
func LooksLikeFormatPatchDir(pd *series.PatchDir) bool {
	if has, err := pd.Has(series.OrderFile); has || err != nil {
		return false
	}
	entries, _ := pd.ReadDir(".")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".patch") {
			return true
		}
	}
	return false
}

// NormalisedView reads a format-patch directory as the series import would make of it,
// in memory, and returns it with one warning per normalisation, so that check and apply
// can use such a directory as it is. It reads the directory as import does.
func NormalisedView(ctx context.Context, pd *series.PatchDir) (fs.FS, []string, error) {
	dir := pd.Name()
	mails, err := readDirMails(ctx, pd)
	if err != nil {
		return nil, nil, err
	}
	if len(mails) > series.MaxID {
		return nil, nil, fmt.Errorf("%s holds %d mails; a series has at most %d (four-digit IDs)", series.QuotePath(dir), len(mails), series.MaxID)
	}
	fsys := fstest.MapFS{}
	var order strings.Builder
	var warnings []string
	n := 0
	for _, m := range mails {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", dir, err)
		}
		if isCoverLetter(m) {
			warnings = append(warnings, m.Source+": a cover letter (no diff), left out")
			continue
		}
		out, subject, notes, err := NormaliseMail(m.Raw)
		if err != nil {
			return nil, nil, m.errorf(err)
		}
		n++
		name := fmt.Sprintf("%04d-%s.patch", n, slugify(subject))
		fsys[name] = &fstest.MapFile{Data: out, Mode: 0o644}
		order.WriteString(name + "\n")
		if name != m.Source {
			notes = append([]string{"would be named " + name}, notes...)
		}
		if len(notes) > 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %s", m.Source, strings.Join(notes, "; ")))
		}
	}
	fsys[series.OrderFile] = &fstest.MapFile{Data: []byte(order.String()), Mode: 0o644}
	warnings = append(warnings, fmt.Sprintf("%s has no %s file: read as `mpspatch import` would write it; run `mpspatch import %s --patches DIR` to make it a series", dir, series.OrderFile, dir))
	return fsys, warnings, nil
}
