package stack

import (
	"bytes"
	"fmt"
	"mime"
	"net/mail"
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
	prefixRE   = lazyregexp.New(`^\[[^\]]*PATCH[^\]]*\]\s*`)
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

// stripSeriesID removes the Series-Id trailer from a mail's message body and returns the
// ID (0 when there is none). When the trailer was a paragraph of its own, the blank line
// before it goes too, so the result is the mail as it was before apply --commit added it.
func stripSeriesID(body []byte) ([]byte, int) {
	lines := strings.SplitAfter(string(body), "\n")
	// Only the last paragraph can hold trailers.
	last := len(lines) - 1
	for last >= 0 && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	for i := last; i >= 0; i-- {
		l := strings.TrimRight(lines[i], "\n")
		if l == "" {
			break
		}
		m := seriesIDRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		ownPara := (i == 0 || strings.TrimSpace(lines[i-1]) == "") && (i == last)
		from := i
		if ownPara && i > 0 {
			from = i - 1
		}
		out := strings.Join(lines[:from], "") + strings.Join(lines[i+1:], "")
		return []byte(out), id
	}
	return body, 0
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
	if err := checkHeaderValue("Subject", subj); err != nil {
		return mm, err
	}
	// Blanks around the decoded subject go, as git mailinfo drops them: a subject that
	// decodes to blanks alone is empty.
	mm.Subject = strings.TrimSpace(prefixRE().ReplaceAllString(subj, ""))
	if mm.Subject == "" {
		return mm, fmt.Errorf("empty Subject: header")
	}
	from := headerValue(p.header, "From")
	addr, err := mail.ParseAddress(from)
	if err != nil {
		return mm, fmt.Errorf("From: header %q: %w", from, err)
	}
	name := addr.Name
	if name == "" {
		name = addr.Address
	}
	for _, v := range []string{name, addr.Address} {
		if err := checkHeaderValue("From", v); err != nil {
			return mm, err
		}
	}
	mm.Author = fmt.Sprintf("%s <%s>", name, addr.Address)
	mm.Name, mm.Email = name, addr.Address
	mm.Date = headerValue(p.header, "Date")
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
