package redact

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// Mask stands where a URL's user-info was.
const Mask = "***"

// Text returns s with the user-info of every URL in it replaced by Mask (see the package
// documentation for the rule). Text without "://" is returned as it is, and Text(Text(s))
// is Text(s).
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	done := 0 // s[:done] is in b
	for pos := 0; ; {
		j := strings.Index(s[pos:], "://")
		if j < 0 {
			break
		}
		sep := pos + j
		start := sep + 3
		end := authorityEnd(s, start)
		at := strings.LastIndexByte(s[start:end], '@')
		if at < 0 {
			pos = start
			continue
		}
		user := s[start : start+at]
		if !keep(scheme(s, sep), user) {
			b.WriteString(s[done:start])
			b.WriteString(Mask)
			done = start + at
		}
		pos = start + at + 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// URL is Text for a value known to be one URL (a config key, a --url flag): it also hides
// the user-info of an address without "://" when its user part holds a ':'
// (user:password@host:path), which git would take for an scp-like ssh address.
func URL(raw string) string {
	if strings.Contains(raw, "://") {
		return Text(raw)
	}
	end := authorityEnd(raw, 0)
	at := strings.LastIndexByte(raw[:end], '@')
	if at < 0 || !strings.Contains(raw[:at], ":") {
		return raw
	}
	return Mask + raw[at:]
}

// HasSecret says whether the URL raw holds something URL would hide.
func HasSecret(raw string) bool { return URL(raw) != raw }

// authorityEnd is the index where the authority starting at s[start] ends: the first '/',
// '?', '#', white space or control character, or the end of s.
func authorityEnd[T string | []byte](s T, start int) int {
	for i := start; i < len(s); i++ {
		if c := s[i]; c == '/' || c == '?' || c == '#' || c <= ' ' || c == 0x7f {
			return i
		}
	}
	return len(s)
}

// scheme is the URL scheme that ends at s[sep] (where "://" starts), lowercased: the run of
// scheme characters before it, from its first letter. "" when there is none.
func scheme(s string, sep int) string {
	i := schemeStart(s, sep)
	return strings.ToLower(s[i:sep])
}

// schemeStart is where the scheme ending at s[sep] starts: the run of letters, digits, '+',
// '-' and '.' before sep, from its first letter (sep itself when there is none).
func schemeStart[T string | []byte](s T, sep int) int {
	i := sep
	for i > 0 && isSchemeChar(s[i-1]) {
		i--
	}
	for i < sep && !isLetter(s[i]) {
		i++
	}
	return i
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// keep says whether user-info user may be shown under scheme: nothing to hide, already
// hidden, or an ssh login name (a lone user part; ssh never takes a password from a URL).
func keep(scheme, user string) bool {
	switch {
	case user == "" || user == Mask:
		return true
	case strings.Contains(user, ":"):
		return false
	}
	switch scheme {
	case "ssh", "git+ssh", "ssh+git", "sftp":
		return true
	}
	return false
}

// JSON returns the JSON document b with every string in it (keys and values) passed
// through Text; everything else is left byte for byte. A string is decoded only when it
// could hold user-info (an '@', or an escape that could spell one), so a large report
// costs one scan. Text that is not valid JSON is redacted as far as it is, and the rest
// as text.
func JSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("://")) && !bytes.Contains(b, []byte(`:\/\/`)) {
		return b
	}
	var out []byte // nil while nothing changed
	done := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end, escaped := stringEnd(b, i+1)
		if end < 0 {
			rest := Text(string(b[i:]))
			if rest == string(b[i:]) {
				break
			}
			out = append(append(out, b[done:i]...), rest...)
			done = len(b)
			break
		}
		lit := b[i : end+1]
		if bytes.IndexByte(lit, '@') >= 0 || escaped {
			var s string
			if json.Unmarshal(lit, &s) == nil {
				if r := Text(s); r != s {
					enc, _ := json.Marshal(r)
					out = append(append(out, b[done:i]...), enc...)
					done = end + 1
				}
			}
		}
		i = end
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// stringEnd finds the closing quote of the JSON string whose content starts at b[i], and
// whether the string holds an escape. -1 when it is not closed.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i, escaped
		}
	}
	return -1, escaped
}

// secretName matches environment variable names that hold credentials.
var secretName = lazyregexp.New(`(?i)(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|_KEY$|_KEY_ID$|^KEY$)`)

// IsSecretName says whether an environment variable of that name holds a credential
// (AWS_SECRET_ACCESS_KEY, MPSPATCH_CACHE_PASSWORD, GITHUB_TOKEN).
func IsSecretName(name string) bool { return secretName().MatchString(name) }

// EnvVar returns the NAME=value pair kv fit to show: the value masked when the name says
// it is a credential or the value is an HTTP Authorization header (git's http.extraHeader
// passed as GIT_CONFIG_VALUE_n), URLs in it redacted otherwise.
func EnvVar(kv string) string {
	name, value, ok := strings.Cut(kv, "=")
	if !ok {
		return kv
	}
	if value != "" && (IsSecretName(name) || isAuthHeader(value)) {
		return name + "=" + Mask
	}
	return name + "=" + Text(value)
}

func isAuthHeader(v string) bool {
	const h = "authorization:"
	return len(v) >= len(h) && strings.EqualFold(v[:len(h)], h)
}
