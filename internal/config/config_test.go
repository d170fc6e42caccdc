package config

import (
	"errors"
	"fmt"
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
	f.Add([]byte("[build]\njobs = \"8\"\nenv = { A = 1 }\n[verify.threads]\n"))
	f.Add([]byte("[[build]]\nverify.timeout = [1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("fuzz.toml", data) // must not panic
		if err == nil {
			return
		}
		for _, w := range goInternals {
			if strings.Contains(err.Error(), w) && !strings.Contains(string(data), w) {
				t.Errorf("the message shows the decoder's Go internals (%q): %v", w, err)
			}
		}
	})
}

// goInternals are words of the decoder's own messages that must never reach a person:
// Go type and field names instead of the config's keys.
var goInternals = []string{"struct field", "of type", "config.", "int64", "[]string", "map["}

// TestConfigErrors: every problem is reported at the file, line and column of the value
// (of the key, for an unknown key or a table), names the dotted key, says what the key
// takes and what it has in the config's own words, and suggests the key meant when a typo
// is near one.
func TestConfigErrors(t *testing.T) {
	const all = " (`mpspatch config --default` lists every key)"
	tests := []struct {
		name, in, want string
	}{
		// A value of the wrong type.
		{"string for an integer", "[build]\njobs = \"8\"\n",
			`config m.toml:2:8: key build.jobs: want an integer, have the string "8"`},
		{"float for an integer", "[build]\njobs = 1.5\n",
			`config m.toml:2:8: key build.jobs: want an integer, have the number 1.5`},
		{"date for an integer", "[build]\njobs = 2024-01-02\n",
			`config m.toml:2:8: key build.jobs: want an integer, have the date 2024-01-02`},
		{"string for a bool", "[build.cache]\nremote_only = \"yes\"\n",
			`config m.toml:2:15: key build.cache.remote_only: want true or false, have the string "yes"`},
		{"integer for a string", "[upstream]\n\ntag = 291\n",
			`config m.toml:3:7: key upstream.tag: want a string, have the integer 291`},
		{"scalar for an array", "[verify]\nthreads = 4\n",
			`config m.toml:2:11: key verify.threads: want an array of integers, have the integer 4`},
		{"an element of the wrong type", "[verify]\nthreads = [2, \"four\"]\n",
			`config m.toml:2:15: key verify.threads: want an array of integers, but element 2 is the string "four"`},
		{"string for an array of strings", "[audit]\npaths = \"aten\"\nbaseline = 3\n",
			`config m.toml:2:9: key audit.paths: want an array of strings, have the string "aten"`},
		{"string for a table of strings", "[build]\nenv = \"USE_CUDA=0\"\n",
			`config m.toml:2:7: key build.env: want a table of strings (such as { NAME = "value" }), have the string "USE_CUDA=0"`},
		{"integer in an inline table of strings", "[build]\nenv = { USE_CUDA = 0 }\n",
			`config m.toml:2:20: key build.env.USE_CUDA: want a string, have the integer 0`},
		{"bool in a table of strings", "[build.env]\nUSE_CUDA = false\n",
			`config m.toml:2:12: key build.env.USE_CUDA: want a string, have false`},
		{"integer for a table", "build = 3\n",
			`config m.toml:1:9: key build: want a table, have the integer 3`},
		{"table for an array", "[verify.threads]\na = 1\n",
			`config m.toml:1:2: key verify.threads: want an array of integers, have a table`},
		{"array of tables for a table", "[[build]]\njobs = 1\n",
			`config m.toml:1:3: key build: want a table, have an array of tables ([[build]])`},
		{"integer for a duration", "[verify]\nprofile = \"quick\"\ntimeout = 5\n",
			`config m.toml:3:11: key verify.timeout: want a duration string such as "90s" or "5m", have the integer 5`},
		{"not a duration", "[verify]\n\ntimeout = \"soon\"\n",
			`config m.toml:3:11: key verify.timeout: want a duration string such as "90s" or "5m", have the string "soon"`},
		{"dotted key", "verify.timeout = true\n",
			`config m.toml:1:18: key verify.timeout: want a duration string such as "90s" or "5m", have true`},
		{"after another table", "[upstream]\nurl = \"u\"\n[verify]\ntimeout = 1",
			`config m.toml:4:11: key verify.timeout: want a duration string such as "90s" or "5m", have the integer 1`},
		{"password masked in the value shown", "[build]\njobs = \"redis://u:hunter2@cache.lan\"\n",
			`config m.toml:2:8: key build.jobs: want an integer, have the string "redis://u:xxxxx@cache.lan"`},
		{"long value cut", "[build]\njobs = \"" + strings.Repeat("x", 100) + "\"\n",
			`config m.toml:2:8: key build.jobs: want an integer, have the string "` + strings.Repeat("x", 60) + `..."`},
		{"keys in another case, as the decoder takes them", "[Build]\nJobs = \"x\"\n",
			`config m.toml:2:8: key Build.Jobs: want an integer, have the string "x"`},
		{"too large", "[build]\njobs = 99999999999999999999\n",
			`config m.toml:2:8: key build.jobs: decimal number is too large to fit in a 64-bit signed integer`},

		// An unknown key, with the one meant when it is near.
		{"typo", "[verify]\nprofil = \"full\"\n",
			"config m.toml:2:1: key verify.profil: unknown key; did you mean verify.profile?" + all},
		{"transposition", "[build]\njbos = 8\n",
			"config m.toml:2:1: key build.jbos: unknown key; did you mean build.jobs?" + all},
		{"table typo", "[bild]\njobs = 8\n",
			"config m.toml:1:2: key bild: unknown key; did you mean build?" + all},
		{"dotted typo", "verify.thread = [2]\n",
			"config m.toml:1:1: key verify.thread: unknown key; did you mean verify.threads?" + all},
		{"in an inline table", "[build]\ncache = { tol = \"ccache\" }\n",
			"config m.toml:2:11: key build.cache.tol: unknown key; did you mean build.cache.tool?" + all},
		{"longer name", "[patches]\ndirectory = \"p\"\n",
			"config m.toml:2:1: key patches.directory: unknown key; did you mean patches.dir?" + all},
		{"under the wrong table", "[build]\ndevice = \"cpu\"\n",
			"config m.toml:2:1: key build.device: unknown key; did you mean verify.device?" + all},
		{"at the top level", "python = \"python3.12\"\n",
			"config m.toml:1:1: key python: unknown key; did you mean build.python or verify.python?" + all},
		{"nothing near", "[upstream]\ntag = \"v2.9.1\"\n\nbranch = \"main\"\n",
			"config m.toml:4:1: key upstream.branch: unknown key" + all},
		{"unknown key under a key that is no table", "verify.profile.x = 1\n",
			`config m.toml:1:1: key verify.profile: want a string, have a table`},

		// A value of the right type that is not allowed: the line of the value.
		{"invalid device", "[upstream]\ntag = \"v2.9.1\"\n\n[verify]\ndevice = \"metal\"\n",
			`config m.toml:5:10: key verify.device: want "mps", "cuda", "cpu" or empty, have "metal"`},
		{"invalid profile, dotted", "verify.profile = \"slow\"\n",
			`config m.toml:1:18: key verify.profile: want "quick" or "full", have "slow"`},
		{"short sha", "[upstream]\ncommit = \"d38164a\"\n",
			`config m.toml:2:10: key upstream.commit: want a full 40-hex commit SHA, have "d38164a"`},
		{"thread count out of range", "[verify]\nthreads = [2, 0]\n",
			`config m.toml:2:1: key verify.threads: thread count 0 out of range 1..256`},
		{"negative jobs", "[build]\n# many\njobs = -2\n",
			`config m.toml:3:8: key build.jobs: must not be negative`},
		{"secret in an inline table", "[build.cache]\nenv = { AWS_SECRET_ACCESS_KEY = \"x\" }\n",
			`config m.toml:2:33: key build.cache.env.AWS_SECRET_ACCESS_KEY: looks like a secret`},
		{"password in the remote", "[build.cache]\nremote = \"redis://u:hunter2@cache.lan\"\n",
			`config m.toml:2:10: key build.cache.remote: holds a password`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("m.toml", []byte(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("%q:\nhave %v\nwant %s", tt.in, err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 || ce.File != "m.toml" || ce.Key == "" {
				t.Errorf("error %#v lacks its file, line or key", err)
			}
			for _, w := range append(goInternals, "hunter2") {
				if strings.Contains(err.Error(), w) {
					t.Errorf("the message shows %q: %v", w, err)
				}
			}
		})
	}
}

// TestKeyError: a value found wrong when it is used is reported at the line that sets it,
// in the file it came from, and is still the error it wraps; the embedded default has no
// file to name.
func TestKeyError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mpspatch.toml")
	if err := os.WriteFile(path, []byte("# mine\n[patches]\ndir = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cause := os.ErrNotExist
	err = c.KeyError("patches.dir", fmt.Errorf("x: %w", cause))
	want := "config " + path + ":3:7: key patches.dir: x: file does not exist"
	if err == nil || err.Error() != want {
		t.Errorf("have %v\nwant %s", err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 3 || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("have %#v, want a *Error at line 3 wrapping the cause", err)
	}
	if have := Default().KeyError("patches.dir", cause); have != cause {
		t.Errorf("the default config: have %v, want the cause unchanged", have)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"jobs", "jobs", 0}, {"jbos", "jobs", 1}, {"profil", "profile", 1},
		{"bild", "build", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"ca", "abc", 3}} {
		if have := editDistance(tt.a, tt.b); have != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, have, tt.want)
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
