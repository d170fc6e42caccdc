package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	c := Default()
	if have, want := c.Upstream.Commit, "d38164a545b4a4e4e0cf73ce67173f70574890b6"; have != want {
		t.Errorf("commit: have %s, want %s", have, want)
	}
	if have, want := c.Verify.Timeout.Duration, 5*time.Minute; have != want {
		t.Errorf("timeout: have %s, want %s", have, want)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; empty means success
		check   func(t *testing.T, c Config)
	}{
		{name: "empty keeps defaults", in: "", check: func(t *testing.T, c Config) {
			if c.Upstream.Tag != "v2.9.1" {
				t.Errorf("tag: have %q", c.Upstream.Tag)
			}
		}},
		{name: "override one key", in: "[verify]\nprofile = \"full\"\n", check: func(t *testing.T, c Config) {
			if c.Verify.Profile != "full" || c.Verify.Python != "python3" {
				t.Errorf("have %+v", c.Verify)
			}
		}},
		{name: "unknown key", in: "[verify]\nprofil = \"full\"\n", wantErr: "cfg.toml:2:1: key verify.profil: unknown key"},
		{name: "wrong type", in: "[build]\njobs = \"eight\"\n", wantErr: "cfg.toml:2"},
		{name: "bad duration", in: "[verify]\ntimeout = \"soon\"\n", wantErr: "want a duration"},
		{name: "short sha", in: "[upstream]\ncommit = \"d38164a\"\n", wantErr: "upstream.commit: want a full 40-hex commit SHA"},
		{name: "bad profile", in: "[verify]\nprofile = \"slow\"\n", wantErr: "verify.profile"},
		{name: "bad threads", in: "[verify]\nthreads = [0]\n", wantErr: "verify.threads"},
		{name: "syntax", in: "[verify\n", wantErr: "cfg.toml:1"},
		{name: "empty build args", in: "[build]\nargs = []\n", wantErr: "build.args: must not be empty"},
		{name: "cache settings", in: "[build]\nvenv = \"/v\"\n[build.cache]\ntool = \"ccache\"\nremote = \"redis://cache.lan:6379\"\npassword_env = \"CACHE_PW\"\nenv = { CCACHE_COMPILERCHECK = \"content\" }\n",
			check: func(t *testing.T, c Config) {
				if c.Build.Venv != "/v" || c.Build.Cache.Tool != "ccache" || c.Build.Cache.PasswordEnv != "CACHE_PW" || c.Build.Cache.Env["CCACHE_COMPILERCHECK"] != "content" {
					t.Errorf("have %+v", c.Build)
				}
			}},
		{name: "default cache", in: "", check: func(t *testing.T, c Config) {
			if c.Build.Cache.Tool != "auto" || c.Build.Cache.Remote != "" || c.Build.Venv != "" {
				t.Errorf("have %+v", c.Build)
			}
		}},
		{name: "bad cache tool", in: "[build.cache]\ntool = \"distcc\"\n", wantErr: "build.cache.tool"},
		{name: "password in the remote", in: "[build.cache]\nremote = \"redis://u:hunter2@cache.lan\"\n", wantErr: "build.cache.remote: holds a password"},
		{name: "password-only user-info in a redis remote", in: "[build.cache]\nremote = \"redis://hunter2@cache.lan\"\n", wantErr: "build.cache.remote: redis://***@cache.lan holds user-info, which ccache reads as a password"},
		{name: "token in an https remote", in: "[build.cache]\nremote = \"https://hunter2@cache.lan/webdav\"\n", wantErr: "build.cache.remote: https://***@cache.lan/webdav holds user-info"},
		{name: "user name beside password_env", in: "[build.cache]\nremote = \"redis://alice@cache.lan\"\npassword_env = \"CACHE_PW\"\n", check: func(t *testing.T, c Config) {
			if c.Build.Cache.Remote != "redis://alice@cache.lan" {
				t.Errorf("remote: have %q", c.Build.Cache.Remote)
			}
		}},
		{name: "unparseable remote with a password", in: "[build.cache]\nremote = \"redis://u:hunter2%zz@cache.lan\"\n", wantErr: "have \"redis://***@cache.lan\""},
		{name: "secret in the cache env", in: "[build.cache]\nenv = { AWS_SECRET_ACCESS_KEY = \"x\" }\n", wantErr: "build.cache.env.AWS_SECRET_ACCESS_KEY: looks like a secret"},
		{name: "token in the cache env", in: "[build.cache]\nenv = { ACTIONS_RUNTIME_TOKEN = \"x\" }\n", wantErr: "looks like a secret"},
		{name: "password_env without remote", in: "[build.cache]\npassword_env = \"X\"\n", wantErr: "build.cache.password_env"},
		{name: "custom build args", in: "[build]\nargs = [\"setup.py\", \"develop\"]\n", check: func(t *testing.T, c Config) {
			if len(c.Build.Args) != 2 || c.Build.Args[0] != "setup.py" {
				t.Errorf("args: have %q", c.Build.Args)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("cfg.toml", []byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("have error %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error shows the password: %v", err)
				}
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("error %T is not *config.Error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("have error %v", err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add(DefaultTOML())
	f.Add([]byte("[verify]\nthreads = [1, 2]\ntimeout = \"1s\"\n"))
	f.Add([]byte("[build.env]\nA = \"b\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Parse("fuzz.toml", data) // must not panic
	})
}

// TestWrongTypeNamesFileLineAndKey: a value of the wrong type is reported like an
// unknown key, with the file, the line and the dotted key.
func TestWrongTypeNamesFileLineAndKey(t *testing.T) {
	for in, want := range map[string]string{
		"[verify]\nprofile = \"quick\"\ntimeout = 5\n":   `config m.toml:3:1: key verify.timeout: want a duration string such as "90s" or "5m", have 5`,
		"[verify]\n\ntimeout = \"soon\"\n":               `config m.toml:3:11: key verify.timeout:`,
		"verify.timeout = true\n":                        `config m.toml:1:1: key verify.timeout: want a duration string`,
		"[build]\njobs = \"many\"\n":                     `config m.toml:2:8: key build.jobs:`,
		"[audit]\npaths = \"aten\"\nbaseline = 3\n":      `config m.toml:2:9: key audit.paths:`,
		"[upstream]\nurl = \"u\"\n[verify]\ntimeout = 1": `config m.toml:4:1: key verify.timeout:`,
	} {
		_, err := Parse("m.toml", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q:\nhave %v\nwant prefix %s", in, err, want)
		}
	}
}

func TestLoadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(%s): have %v, want a refusal", p, err)
		}
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized config: have %v", err)
	}
}

// TestDefaultMatchesDefaultTOML: Default is written out in Go for start-up's sake; the
// embedded default.toml, which users read and `config init` writes, must decode to the
// very same values (empty maps and lists included), and each call must return values of
// its own.
func TestDefaultMatchesDefaultTOML(t *testing.T) {
	decoded, err := decode("(embedded default)", defaultTOML, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if have := Default(); !reflect.DeepEqual(have, decoded) {
		t.Errorf("Default() differs from default.toml:\nhave %#v\nwant %#v", have, decoded)
	}
	a := Default()
	a.Build.Env["X"] = "1"
	a.Audit.Paths[0] = "elsewhere"
	if b := Default(); len(b.Build.Env) != 0 || b.Audit.Paths[0] != "aten/src/ATen/mps" {
		t.Errorf("Default() shares its maps or slices between calls")
	}
}
