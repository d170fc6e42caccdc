package gitcli

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url     string
		wantErr string
	}{
		{"https://github.com/pytorch/pytorch.git", ""},
		{"ssh://git@github.com/pytorch/pytorch.git", ""},
		{"git://example.com/pytorch.git", ""},
		{"file:///srv/git/pytorch.git", ""},
		{"git@github.com:pytorch/pytorch.git", ""},
		{"http://github.com/pytorch/pytorch.git", "scheme http is not allowed"},
		{"ext::sh -c touch% /tmp/pwned", "is not allowed"},
		{"/srv/git/pytorch.git", "want https://"},
		{"https:///nohost", "no host"},
		{"http://user:hunter2@example.com/x.git", "http://***@example.com/x.git: scheme http"},
		{"ssh://bob:hunter2@example.com/x.git", "ssh://***@example.com/x.git: holds a password, which git cannot use over ssh"},
		{"git://bob:hunter2@example.com/x.git", "holds a password"},
		{"https://user:hun\"ter2@example.com/x.git", "https://***@example.com/x.git: not a URL"},
		{"https://user:hunter2%zz@example.com/x.git", "https://***@example.com/x.git: not a URL"},
		{"user:hunter2@example.com:x.git", "upstream url ***@example.com:x.git: scheme user is not allowed"},
	}
	for _, tt := range tests {
		err := CheckURL(tt.url)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("CheckURL(%q): %v, want ok", tt.url, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("CheckURL(%q): %v, want an error containing %q", tt.url, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("CheckURL(%q): %v shows the password", tt.url, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ have, want string }{
		{"https://user:tok@example.com/x.git", "https://***@example.com/x.git"},
		{"https://tok@example.com/x.git", "https://***@example.com/x.git"},
		{"https://example.com/x.git", "https://example.com/x.git"},
		{"git@github.com:pytorch/pytorch.git", "git@github.com:pytorch/pytorch.git"},
	}
	for _, tt := range tests {
		if have := RedactURL(tt.have); have != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.have, have, tt.want)
		}
	}
}

// A failed git command's message holds its argv and the tail of its stderr, both of which
// can hold a URL: neither shows the credentials.
func TestErrorRedactsCredentials(t *testing.T) {
	e := &Error{Op: "fetch from ssh://***@h/x", Args: []string{"fetch", "--", "ssh://bob:hunter2@h/x"},
		Stderr: "fatal: unable to access 'https://ci:t0ken@h/x/': 403", Err: errors.New("exit status 128")}
	have := e.Error()
	if strings.Contains(have, "hunter2") || strings.Contains(have, "t0ken") {
		t.Errorf("have %q", have)
	}
	if !strings.Contains(have, "git fetch -- ssh://***@h/x") {
		t.Errorf("have %q, want git's argv redacted", have)
	}
}

func TestWithCredentials(t *testing.T) {
	base := &Git{Env: []string{"PATH=/bin", "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=a", "GIT_CONFIG_VALUE_0=1", "GIT_CONFIG_KEY_1=b", "GIT_CONFIG_VALUE_1=2"}}
	g, clean := base.WithCredentials("https://ci:p%40ss@example.com:8443/up.git")
	if clean != "https://example.com:8443/up.git" {
		t.Errorf("clean URL %q", clean)
	}
	env := strings.Join(g.Env, "\n")
	for _, want := range []string{"GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_2=http.https://example.com:8443/.extraHeader",
		"GIT_CONFIG_VALUE_2=Authorization: Basic Y2k6cEBzcw==", "GIT_CONFIG_KEY_1=b"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Count(env, "GIT_CONFIG_COUNT=") != 1 {
		t.Errorf("GIT_CONFIG_COUNT set twice:\n%s", env)
	}
	if g2, u := base.WithCredentials("ssh://git@example.com/x.git"); g2 != base || u != "ssh://git@example.com/x.git" {
		t.Errorf("ssh URL changed: %q", u)
	}
}

// FuzzRedactURL: whatever the URL, its password never survives redaction.
func FuzzRedactURL(f *testing.F) {
	f.Add("https://user:secret@example.com/x.git")
	f.Add("ssh://a:b@h/p")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || u.Scheme == "" {
			return
		}
		pass, ok := u.User.Password()
		if !ok || len(pass) < 4 {
			return
		}
		out := RedactURL(raw)
		// The password must be gone from the output's user info; the same characters may
		// stand elsewhere in the URL (host, path), raw or percent-encoded, legitimately.
		rest := out
		if i := strings.Index(rest, "://"); i >= 0 {
			rest = rest[i+3:]
		}
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[:i]
		}
		userinfo := ""
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			userinfo = rest[:i]
		}
		if strings.Contains(userinfo, pass) || strings.Contains(userinfo, url.QueryEscape(pass)) || strings.Contains(userinfo, url.PathEscape(pass)) {
			t.Fatalf("RedactURL(%q) = %q shows the password in its user info %q", raw, out, userinfo)
		}
	})
}

// ReadObjects streams each object into a buffer of its own and checks it against its ID:
// content that hashes to another ID (a damaged or tampered object store) is an error,
// never content; an object the store lacks is listed as missing.
func TestReadObjectsChecksEveryObject(t *testing.T) {
	g := newGit(t)
	big := strings.Repeat("a line of a large file\n", 100000)
	dir := newRepo(t, g, map[string]string{"small.txt": "small\n", "big.txt": big, "empty.txt": ""})
	oid := func(p string) string { return git(t, g, dir, "rev-parse", "HEAD:"+p) }
	absent := strings.Repeat("0", 39) + "1"
	objs, missing, err := g.ReadObjects(context.Background(), dir, []string{oid("small.txt"), oid("big.txt"), absent, oid("empty.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if string(objs[oid("small.txt")]) != "small\n" || string(objs[oid("big.txt")]) != big || len(objs[oid("empty.txt")]) != 0 {
		t.Errorf("objects read back wrong: %d objects", len(objs))
	}
	if len(missing) != 1 || missing[0] != absent {
		t.Errorf("missing %v, want [%s]", missing, absent)
	}

	// The small file's object file replaced by the big file's: git hands back the big
	// file's content under the small file's ID.
	path := func(o string) string { return filepath.Join(dir, ".git", "objects", o[:2], o[2:]) }
	data, err := os.ReadFile(path(oid("big.txt")))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path(oid("small.txt")), 0o644)
	if err := os.WriteFile(path(oid("small.txt")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = g.ReadObjects(context.Background(), dir, []string{oid("small.txt")})
	var ce *CorruptObjectError
	if !errors.As(err, &ce) || ce.OID != oid("small.txt") || ce.Have != oid("big.txt") {
		t.Errorf("have %v, want a *CorruptObjectError naming both IDs", err)
	}
	if _, _, err := g.ReadObjects(context.Background(), dir, []string{"--batch-all-objects"}); err == nil {
		t.Error("an argument that is not an object ID was taken")
	}
}
