package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct{ name, have, want string }{
		{"https user and token", "https://user:tok@example.com/x.git", "https://***@example.com/x.git"},
		{"https lone token", "https://ghp_tok@github.com/x.git", "https://***@github.com/x.git"},
		{"ssh password", "ssh://bob:hunter2@example.com/x.git", "ssh://***@example.com/x.git"},
		{"ssh login kept", "ssh://git@github.com/pytorch/pytorch.git", "ssh://git@github.com/pytorch/pytorch.git"},
		{"git+ssh login kept", "git+ssh://git@host/x", "git+ssh://git@host/x"},
		{"redis password-only", "redis://SECRET@cache:6379/0", "redis://***@cache:6379/0"},
		{"rediss user and password", "rediss://default:SECRET@cache:6380", "rediss://***@cache:6380"},
		{"no user-info", "https://example.com/x.git", "https://example.com/x.git"},
		{"empty user-info", "https://@example.com/x", "https://@example.com/x"},
		{"@ in the path only", "https://example.com/@scope/pkg", "https://example.com/@scope/pkg"},
		{"@ in the password", "https://u:p@ss@host/x", "https://***@host/x"},
		{"rejected by net/url: quote", `https://u:pa"ss@host/x`, "https://***@host/x"},
		{"rejected by net/url: bad escape", "https://u:p%zz@host/x", "https://***@host/x"},
		{"rejected by net/url: space in host", "https://u:secret@ho st/x", "https://***@ho st/x"},
		{"in a sentence", "git ls-remote -- https://ci:tok@h/up.git refs/tags/v1: exit status 128",
			"git ls-remote -- https://***@h/up.git refs/tags/v1: exit status 128"},
		{"quoted by git", "fatal: unable to access 'https://ci:tok@h/up.git/': 403",
			"fatal: unable to access 'https://***@h/up.git/': 403"},
		{"two URLs", "https://a:1@h1/x and ssh://b:2@h2/y", "https://***@h1/x and ssh://***@h2/y"},
		{"no scheme before ://", "://tok@h", "://***@h"},
		{"end of text", "see https://tok@", "see https://***@"},
		{"already redacted", "https://***@example.com/x", "https://***@example.com/x"},
		{"no URL", "user:pw@host:path", "user:pw@host:path"},
		{"control character ends the authority", "https://h\x1b@x", "https://h\x1b@x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := Text(tt.have); have != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.have, have, tt.want)
			}
		})
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ have, want string }{
		{"https://user:tok@example.com/x.git", "https://***@example.com/x.git"},
		{"user:pw@host:path/x.git", "***@host:path/x.git"},
		{"git@github.com:pytorch/pytorch.git", "git@github.com:pytorch/pytorch.git"},
		{"/srv/git/pytorch.git", "/srv/git/pytorch.git"},
		{"a:b", "a:b"},
	}
	for _, tt := range tests {
		if have := URL(tt.have); have != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.have, have, tt.want)
		}
		if HasSecret(tt.have) != (tt.have != tt.want) {
			t.Errorf("HasSecret(%q) = %v", tt.have, HasSecret(tt.have))
		}
	}
}

func TestJSON(t *testing.T) {
	doc := []byte(`{"url":"https://ci:s3cret@h/x","who":"a@b","argv":["git","ls-remote","--","https://u:p%zz\"q@h/y"],` +
		`"esc":"https://tok\u0040h/z","n":12,"plain":"https://h/x"}`)
	have := JSON(doc)
	if !json.Valid(have) {
		t.Fatalf("not valid JSON: %s", have)
	}
	for _, secret := range []string{"s3cret", "p%zz", "tok"} {
		if bytes.Contains(have, []byte(secret)) {
			t.Errorf("JSON kept %q: %s", secret, have)
		}
	}
	for _, want := range []string{`"https://***@h/x"`, `"who":"a@b"`, `"n":12`, `"plain":"https://h/x"`, `"https://***@h/z"`} {
		if !bytes.Contains(have, []byte(want)) {
			t.Errorf("JSON lacks %s: %s", want, have)
		}
	}
	clean := []byte(`{"a": "https://h/x", "b": "x@y"}`)
	if have := JSON(clean); !bytes.Equal(have, clean) {
		t.Errorf("JSON changed a document without secrets: %s", have)
	}
}

// A URL cut anywhere between two writes is redacted as if written at once, and a write
// that cannot be the start of one is passed on at once (progress lines stay live).
func TestWriter(t *testing.T) {
	text := "clone: fetch from https://ci:s3cret@example.com/up.git failed\nnext line ssh://bob:pw2@h/x\n"
	for cut := 0; cut <= len(text); cut++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		w.Write([]byte(text[:cut]))
		w.Write([]byte(text[cut:]))
		w.Flush()
		if strings.Contains(out.String(), "s3cret") || strings.Contains(out.String(), "pw2") {
			t.Errorf("cut at %d: %q", cut, out.String())
		}
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("\r\x1b[Kclone: fetch: Receiving objects 45% (450/1000)"))
	if out.String() != "\r\x1b[Kclone: fetch: Receiving objects 45% (450/1000)" {
		t.Errorf("a progress line was held back: %q", out.String())
	}
	out.Reset()
	w.Write([]byte("from https://ci:tok"))
	if strings.Contains(out.String(), "tok") || out.String() != "from " {
		t.Errorf("an unfinished URL was passed on: %q", out.String())
	}
	w.Write([]byte("en@h/x done"))
	if out.String() != "from https://***@h/x done" {
		t.Errorf("have %q", out.String())
	}
}

// FuzzText: a password put in the user-info of a URL anywhere in any text never survives
// Text, the Writer (cut anywhere) or JSON; text without "://" is left as it is; Text is
// idempotent.
func FuzzText(f *testing.F) {
	f.Add("see ", "https", "user", "s3cret", "example.com", "/x.git and more", 3)
	f.Add("", "ssh", "git", "pw", "h", "", 0)
	f.Add("x://a", "redis", "", "SECRET", "cache:6379", "/0", 10)
	f.Add("'", "https", "u", `pa"ss%zz`, "h", "'", 5)
	f.Fuzz(func(t *testing.T, prefix, sch, user, secret, host, suffix string, cut int) {
		if !strings.Contains(prefix+suffix+host, "://") {
			if have := Text(prefix + suffix + host); have != prefix+suffix+host {
				t.Fatalf("Text changed text without a URL: %q -> %q", prefix+suffix+host, have)
			}
		}
		// The secret is marked so that it cannot stand elsewhere in the text by chance,
		// and holds nothing that ends an authority (git would not read it as one then).
		secret = "Zq" + secret + "qZ"
		if strings.ContainsAny(secret+user, "/?#") || strings.IndexFunc(secret+user, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return
		}
		if strings.Contains(prefix+sch+user+host+suffix, "Zq") {
			return
		}
		// A lone user part is the secret too, except under ssh, where it is the login.
		userinfo := user + ":" + secret
		if user == "" && cut%2 == 0 && !keep(scheme(prefix+sch+"://", len(prefix+sch)), "x") {
			userinfo = secret
		}
		s := prefix + sch + "://" + userinfo + "@" + host + suffix
		have := Text(s)
		if strings.Contains(have, secret) {
			t.Fatalf("Text(%q) = %q keeps the secret", s, have)
		}
		if again := Text(have); again != have {
			t.Fatalf("Text is not idempotent: %q -> %q -> %q", s, have, again)
		}
		if !strings.Contains(prefix, "://") && !strings.HasPrefix(have, prefix) {
			t.Fatalf("Text(%q) = %q changed the text before the URL", s, have)
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		if cut < 0 {
			cut = -cut
		}
		c := cut % (len(s) + 1)
		w.Write([]byte(s[:c]))
		w.Write([]byte(s[c:]))
		w.Flush()
		if strings.Contains(out.String(), secret) {
			t.Fatalf("Writer cut at %d: %q -> %q keeps the secret", c, s, out.String())
		}
		doc, _ := json.Marshal(map[string]string{"k": s})
		if red := JSON(doc); bytes.Contains(red, []byte(secret)) || !json.Valid(red) {
			t.Fatalf("JSON(%s) = %s", doc, red)
		}
	})
}

func TestEnvVar(t *testing.T) {
	tests := []struct{ have, want string }{
		{"MPSPATCH_CACHE_PASSWORD=hunter2", "MPSPATCH_CACHE_PASSWORD=***"},
		{"GITHUB_TOKEN=ghp_x", "GITHUB_TOKEN=***"},
		{"AWS_SECRET_ACCESS_KEY=abc", "AWS_SECRET_ACCESS_KEY=***"},
		{"GIT_CONFIG_VALUE_3=Authorization: Basic Y2k6cw==", "GIT_CONFIG_VALUE_3=***"},
		{"GIT_CONFIG_VALUE_0=always", "GIT_CONFIG_VALUE_0=always"},
		{"MPSPATCH_UPSTREAM=https://ci:tok@h/x", "MPSPATCH_UPSTREAM=https://***@h/x"},
		{"PATH=/usr/bin:/bin", "PATH=/usr/bin:/bin"},
		{"EMPTY_TOKEN=", "EMPTY_TOKEN="},
	}
	for _, tt := range tests {
		if have := EnvVar(tt.have); have != tt.want {
			t.Errorf("EnvVar(%q) = %q, want %q", tt.have, have, tt.want)
		}
	}
}
