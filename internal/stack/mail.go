package stack

import (
	"bytes"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// TrailerKey is the commit trailer that records which series entry a commit came from
// (`Series-Id: 0003`). apply --commit adds it, export reads and removes it, so it never
// appears in a patch file.
const TrailerKey = "Series-Id"

var (
	// mboxFromRE is the separator line git format-patch writes before every mail.
	// A mail saved with CRLF line ends has it end in CRLF.
	mboxFromRE = lazyregexp.New(`(?m)^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\r?\n`)
	zeroFrom   = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
	seriesIDRE = lazyregexp.New(`^` + TrailerKey + `: ([0-9]{4})$`)
	trailerRE  = lazyregexp.New(`^[A-Za-z][A-Za-z0-9-]*: `)
)

// splitMbox cuts an mbox written by git format-patch into its mails, each starting with
// its `From <sha> ...` line. Bytes before the first separator are ignored.
func splitMbox(data []byte) [][]byte {
	locs := mboxFromRE().FindAllIndex(data, -1)
	var out [][]byte
	for i, loc := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
			// git format-patch --stdout separates mails with a blank line; it belongs
			// to neither.
			switch m := data[loc[0]:end]; {
			case len(m) > 4 && bytes.HasSuffix(m, []byte("\r\n\r\n")):
				end -= 2
			case len(m) > 2 && bytes.HasSuffix(m, []byte("\n\n")):
				end--
			}
		}
		out = append(out, data[loc[0]:end])
	}
	return out
}

// mailParts locates a mail's pieces: the header block (up to and including the blank
// line that ends it), the message body (up to the `---` line that starts the diffstat),
// and the rest (`---` onwards). A mail without a `---` line has everything after the
// headers as its rest, from the first `diff --git` line.
type mailParts struct {
	header []byte
	body   []byte
	rest   []byte
}

func splitMail(m []byte) (mailParts, error) {
	i := bytes.Index(m, []byte("\n\n"))
	if i < 0 {
		return mailParts{}, fmt.Errorf("no blank line after the mail headers")
	}
	p := mailParts{header: m[:i+2]}
	after := m[i+2:]
	switch {
	case bytes.HasPrefix(after, []byte("---\n")):
		p.rest = after
	default:
		j := bytes.Index(after, []byte("\n---\n"))
		if j < 0 {
			k := bytes.Index(after, []byte("diff --git "))
			if k < 0 {
				return mailParts{}, fmt.Errorf("no `---` line and no `diff --git` line")
			}
			p.body, p.rest = after[:k], after[k:]
			return p, nil
		}
		p.body, p.rest = after[:j+1], after[j+1:]
	}
	return p, nil
}

func (p mailParts) bytes() []byte {
	out := make([]byte, 0, len(p.header)+len(p.body)+len(p.rest))
	return append(append(append(out, p.header...), p.body...), p.rest...)
}

// headerValue returns a header's value with folded continuation lines joined (a fold
// removes only the line break: the continuation keeps its leading blank).
func headerValue(header []byte, key string) string {
	lines := strings.Split(string(header), "\n")
	for i := 0; i < len(lines); i++ {
		k, v, ok := strings.Cut(lines[i], ":")
		if !ok || !strings.EqualFold(k, key) {
			continue
		}
		for i+1 < len(lines) && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t")) {
			i++
			v += lines[i]
		}
		return strings.TrimSpace(v)
	}
	return ""
}

// stripSeriesID removes the Series-Id trailers from a mail's message body and returns
// the ID (0 when there is none). One is expected; a history that an older mpspatch
// rebased can carry the same trailer several times, and every copy goes, the last one
// naming the ID. When the trailers were a paragraph of their own, the blank line before
// it goes too, so the result is the mail as it was before apply --commit added it.
func stripSeriesID(body []byte) ([]byte, int) {
	lines := strings.SplitAfter(string(body), "\n")
	// Only the last paragraph can hold trailers.
	last := len(lines) - 1
	for last >= 0 && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	first := last
	for first > 0 && strings.TrimSpace(lines[first-1]) != "" {
		first--
	}
	if first < 0 {
		return body, 0
	}
	id := 0
	var kept []string
	for i := first; i <= last; i++ {
		if m := seriesIDRE().FindStringSubmatch(strings.TrimRight(lines[i], "\n")); m != nil {
			id, _ = strconv.Atoi(m[1])
			continue
		}
		kept = append(kept, lines[i])
	}
	if id == 0 {
		return body, 0
	}
	head := lines[:first]
	if len(kept) == 0 && first > 0 {
		head = lines[:first-1] // the paragraph is gone: so is the blank line before it
	}
	out := strings.Join(head, "") + strings.Join(kept, "") + strings.Join(lines[last+1:], "")
	return []byte(out), id
}

// addSeriesID appends the Series-Id trailer to a commit message: to its trailer
// paragraph when the last paragraph is one, else as a paragraph of its own.
func addSeriesID(msg string, id int) string {
	line := fmt.Sprintf("%s: %04d\n", TrailerKey, id)
	msg = strings.TrimRight(msg, "\n") + "\n"
	subject, body, hasBody := strings.Cut(msg, "\n\n")
	_ = subject
	if hasBody {
		paras := strings.Split(strings.TrimRight(body, "\n"), "\n\n")
		lastPara := paras[len(paras)-1]
		allTrailers := lastPara != ""
		for _, l := range strings.Split(lastPara, "\n") {
			if !trailerRE().MatchString(l) {
				allTrailers = false
				break
			}
		}
		if allTrailers {
			return msg + line
		}
	}
	return msg + "\n" + line
}

// mailMessage is what a mail says about the commit it describes.
type mailMessage struct {
	Subject string // without the [PATCH ...] prefix, unfolded, decoded
	Author  string // "Name <email>"
	Name    string
	Email   string
	Date    string // the Date: header as written (git parses it, zone included)
	Message string // the whole commit message: subject, blank line, body
}

var wordDecoder = mime.WordDecoder{}

// parseMailMessage reads the commit message, author and date of a format-patch mail, as
// `git mailinfo` would: the subject unfolded and stripped of its [PATCH] prefix, the body
// up to the `---` line.
func parseMailMessage(m []byte) (mailMessage, error) {
	p, err := splitMail(m)
	if err != nil {
		return mailMessage{}, err
	}
	var mm mailMessage
	subj := headerValue(p.header, "Subject")
	if dec, err := wordDecoder.DecodeHeader(subj); err == nil {
		subj = dec
	}
	from, date := headerValue(p.header, "From"), headerValue(p.header, "Date")
	// In-body headers, as git mailinfo reads them: format-patch --from (format.from)
	// puts the author in a "From:" line at the top of the body, and a forwarded patch
	// may carry "Subject:" and "Date:" there too. They win over the mail's own.
	p.body, from, subj, date = inBodyHeaders(p.body, from, subj, date)
	if err := checkHeaderValue("Subject", subj); err != nil {
		return mm, err
	}
	// Blanks around the decoded subject go, as git mailinfo drops them: a subject that
	// decodes to blanks alone is empty.
	mm.Subject = strings.TrimSpace(cleanSubject(subj))
	if mm.Subject == "" {
		return mm, fmt.Errorf("empty Subject: header")
	}
	name, email, err := parseAuthor(from)
	if err != nil {
		return mm, fmt.Errorf("From: header %q: %w", from, err)
	}
	for _, v := range []string{name, email} {
		if err := checkHeaderValue("From", v); err != nil {
			return mm, err
		}
	}
	mm.Author = fmt.Sprintf("%s <%s>", name, email)
	mm.Name, mm.Email = name, email
	mm.Date = date
	if mm.Date == "" {
		return mm, fmt.Errorf("missing Date: header")
	}
	if err := checkHeaderValue("Date", mm.Date); err != nil {
		return mm, err
	}
	mm.Message = mm.Subject + "\n"
	if len(bytes.TrimSpace(p.body)) > 0 {
		mm.Message += "\n" + string(p.body)
	}
	return mm, nil
}

// parseAuthor reads a From: value as git mailinfo does, not as RFC 5322 does: git
// accepts, and format-patch writes, addresses no mail parser takes ("dependabot[bot]"
// in the local part, a "(none)" host, an empty "<>"), and 3.8% of the commits of real
// histories carry one. RFC 2047 words are decoded; the address is what stands between
// the last "<" and its ">", the name what comes before it, unquoted; without angle
// brackets, "addr (Name)" or a bare address. A missing name is the address, as in git.
func parseAuthor(from string) (name, email string, err error) {
	if dec, derr := wordDecoder.DecodeHeader(from); derr == nil {
		from = dec
	}
	from = strings.TrimSpace(from)
	if strings.ContainsAny(from, "\n\r\x00") {
		return "", "", fmt.Errorf("holds a line break or NUL")
	}
	if lt := strings.LastIndexByte(from, '<'); lt >= 0 {
		gt := strings.IndexByte(from[lt:], '>')
		if gt < 0 {
			return "", "", fmt.Errorf("no > after <")
		}
		email = strings.TrimSpace(from[lt+1 : lt+gt])
		name = strings.TrimSpace(from[:lt])
		if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
			name = unquoteMailName(name[1 : len(name)-1])
		}
	} else if op := strings.IndexByte(from, '('); op > 0 && strings.HasSuffix(from, ")") {
		email = strings.TrimSpace(from[:op])
		name = strings.TrimSpace(from[op+1 : len(from)-1])
	} else {
		email = from
	}
	if strings.ContainsAny(email, "<> ") {
		return "", "", fmt.Errorf("address %q holds <, > or a space", email)
	}
	if name == "" {
		name = email
	}
	if name == "" {
		return "", "", fmt.Errorf("no name and no address")
	}
	return name, email, nil
}

// unquoteMailName undoes the backslash escapes of a quoted display name.
func unquoteMailName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cleanSubject strips what git mailinfo strips from a subject by default (no -k):
// every leading "Re:" and bracketed group ("[PATCH v2 3/7]", "[HOSTILE 1/2]",
// "[RFC]"), and surrounding white space.
func cleanSubject(s string) string {
	s = strings.TrimSpace(s)
	for {
		switch {
		case len(s) >= 3 && strings.EqualFold(s[:3], "re:"):
			s = strings.TrimSpace(s[3:])
		case strings.HasPrefix(s, "["):
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return s
			}
			s = strings.TrimSpace(s[end+1:])
		default:
			return s
		}
	}
}

// inBodyHeaders takes the in-body "From:", "Subject:" and "Date:" lines at the top of a
// mail body (before the first blank line), as git mailinfo does, and returns the body
// without them and the values they override.
func inBodyHeaders(body []byte, from, subj, date string) ([]byte, string, string, string) {
	rest := body
	found := false
	for {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			break
		}
		l := string(line)
		switch {
		case strings.HasPrefix(l, "From: "):
			from = strings.TrimSpace(l[len("From: "):])
		case strings.HasPrefix(l, "Subject: "):
			subj = strings.TrimSpace(l[len("Subject: "):])
		case strings.HasPrefix(l, "Date: "):
			date = strings.TrimSpace(l[len("Date: "):])
		case l == "" && found:
			return after, from, subj, date
		default:
			return body, from, subj, date
		}
		found = true
		rest = after
	}
	return body, from, subj, date
}

// slugify makes the slug of a new patch file name from a subject: lowercase ASCII
// letters and digits, words joined by dashes, at most 52 characters, cut at a word.
func slugify(subject string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(subject) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	s := b.String()
	const max = 52
	if len(s) > max {
		s = s[:max]
		if i := strings.LastIndexByte(s, '-'); i > 20 {
			s = s[:i]
		}
		s = strings.TrimRight(s, "-")
	}
	if s == "" {
		s = "patch"
	}
	return s
}
