package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/redact"
	"github.com/mpspatch/mpspatch/internal/run"
)

// CacheOptions configure the compiler cache ([build.cache] in mpspatch.toml).
type CacheOptions struct {
	// Tool is "auto" (or empty: ccache, else sccache, when found in PATH), "ccache",
	// "sccache" or "none".
	Tool string
	// Remote is the shared storage URL; see docs/build.md for what each tool accepts.
	Remote string
	// RemoteOnly makes ccache skip its local cache.
	RemoteOnly bool
	// PasswordEnv names the environment variable that holds the remote's password.
	PasswordEnv string
	// Dir is the local cache directory; empty leaves the tool's default.
	Dir string
	// Env is further tool settings, passed through as they are.
	Env map[string]string
}

// Launcher is the compiler cache a build runs its compilers through.
type Launcher struct {
	Tool    string `json:"tool"`    // "ccache" or "sccache"
	Path    string `json:"path"`    // the program CMake starts
	Version string `json:"version"` // its --version, first line
	// Remote is the shared storage with any password removed, for people and the stamp.
	Remote string `json:"remote,omitempty"`

	// env is what the build's environment gains, secrets included; never recorded.
	env map[string]string
}

// String is "ccache 4.7.5 (/usr/bin/ccache)", or "none".
func (l *Launcher) String() string {
	if l == nil {
		return "none"
	}
	return fmt.Sprintf("%s (%s)", l.Version, l.Path)
}

// launcherVars are the CMake variables naming the compiler launcher. CMake (3.17+) takes
// them from the environment on a first configure, and PyTorch's
// tools/setup_helpers/cmake.py passes every environment variable starting with CMAKE_
// to cmake as -D on each configure, so an existing build directory picks them up too.
// OBJC and OBJCXX cover the .m/.mm sources of the MPS backend.
var launcherVars = []string{
	"CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER",
	"CMAKE_OBJC_COMPILER_LAUNCHER", "CMAKE_OBJCXX_COMPILER_LAUNCHER",
}

// resolveLauncher finds the compiler cache opts ask for in the PATH of env. "auto" finds
// none without complaint; a named tool that is missing is an *EnvError.
func resolveLauncher(ctx context.Context, opts CacheOptions, tree string, env []string) (*Launcher, error) {
	tools := []string{opts.Tool}
	switch opts.Tool {
	case "none":
		return nil, nil
	case "", "auto":
		tools = []string{"ccache", "sccache"}
	case "ccache", "sccache":
	default:
		return nil, fmt.Errorf("compiler cache: unknown tool %q (want auto, ccache, sccache or none)", opts.Tool)
	}
	for _, tool := range tools {
		path := lookPath(tool, envValue(env, "PATH"))
		if path == "" {
			continue
		}
		out, err := run.Output(ctx, run.Cmd{Argv: []string{path, "--version"}, Env: env, Timeout: 30 * time.Second})
		if err != nil {
			return nil, &EnvError{What: tool, Err: fmt.Errorf("compiler cache %s does not run: %w", path, err)}
		}
		version, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		l := &Launcher{Tool: tool, Path: path, Version: strings.TrimSpace(version), env: map[string]string{}}
		if err := l.configure(opts, tree, env); err != nil {
			return nil, err
		}
		return l, nil
	}
	if opts.Tool == "ccache" || opts.Tool == "sccache" {
		return nil, &EnvError{What: opts.Tool, Err: fmt.Errorf("compiler cache %s not found in PATH ([build.cache] tool = %q; install it or set tool = \"auto\")", opts.Tool, opts.Tool)}
	}
	if opts.Remote != "" {
		return nil, &EnvError{What: "ccache", Err: fmt.Errorf("compiler cache: [build.cache] remote is set but neither ccache nor sccache is in PATH")}
	}
	return nil, nil
}

// configure fills l.env: the launcher variables, the local directory, the remote storage
// (with its password from the environment), then opts.Env.
func (l *Launcher) configure(opts CacheOptions, tree string, env []string) error {
	for _, v := range launcherVars {
		l.env[v] = l.Path
	}
	remote := opts.Remote
	if remote != "" {
		u, err := url.Parse(remote)
		if err != nil {
			return fmt.Errorf("compiler cache: remote %q: %w", redact.URL(remote), err)
		}
		l.Remote = u.Redacted()
		if opts.PasswordEnv != "" {
			pw, ok := lookupEnv(env, opts.PasswordEnv)
			if !ok || pw == "" {
				return &EnvError{What: l.Tool, Err: fmt.Errorf("compiler cache: [build.cache] password_env names %s, which is not set in the environment", opts.PasswordEnv)}
			}
			user := ""
			if u.User != nil {
				user = u.User.Username()
			}
			u.User = url.UserPassword(user, pw)
			if user == "" && l.Tool == "ccache" {
				// ccache reads redis://SECRET@host as a password with no user name
				// (redis://:SECRET@host fails to authenticate).
				u.User = url.User(pw)
			}
			remote = u.String()
		}
	}
	switch l.Tool {
	case "ccache":
		// Paths under the tree are hashed relative to it, so two checkouts in different
		// directories (two machines, two CI runners) share cache entries.
		if _, set := lookupEnv(env, "CCACHE_BASEDIR"); !set {
			l.env["CCACHE_BASEDIR"] = tree
		}
		if opts.Dir != "" {
			l.env["CCACHE_DIR"] = opts.Dir
		}
		if remote != "" {
			l.env["CCACHE_REMOTE_STORAGE"] = remote
		}
		if opts.RemoteOnly {
			l.env["CCACHE_REMOTE_ONLY"] = "true"
		}
	case "sccache":
		if opts.Dir != "" {
			l.env["SCCACHE_DIR"] = opts.Dir
		}
		if remote != "" {
			u, _ := url.Parse(remote)
			bucket, prefix := u.Host, strings.Trim(u.Path, "/")
			switch u.Scheme {
			case "redis", "rediss":
				l.env["SCCACHE_REDIS"] = remote
			case "s3":
				l.env["SCCACHE_BUCKET"] = bucket
				if prefix != "" {
					l.env["SCCACHE_S3_KEY_PREFIX"] = prefix
				}
			case "gs", "gcs":
				l.env["SCCACHE_GCS_BUCKET"] = bucket
				if prefix != "" {
					l.env["SCCACHE_GCS_KEY_PREFIX"] = prefix
				}
			case "http", "https":
				l.env["SCCACHE_WEBDAV_ENDPOINT"] = remote
			default:
				return fmt.Errorf("compiler cache: sccache remote %s: scheme %q not supported (redis, s3, gs, http(s) for WebDAV; GitHub Actions: env SCCACHE_GHA_ENABLED = \"on\")", l.Remote, u.Scheme)
			}
		}
	}
	for k, v := range opts.Env {
		l.env[k] = v
	}
	return nil
}

// CacheStats is what the compiler cache did during one build, from its own statistics
// (counters read before and after the build, subtracted).
type CacheStats struct {
	Tool string `json:"tool"`
	// Hits are compilations served from the cache (local or remote), Misses compiled.
	Hits   int `json:"hits"`
	Misses int `json:"misses"`
	// RemoteHits are the hits the shared storage served (ccache counts them; sccache's
	// statistics do not tell local from remote, so they are 0 there).
	RemoteHits int `json:"remote_hits"`
	// HitRate is Hits / (Hits + Misses) in percent; 0 when nothing was compiled.
	HitRate float64 `json:"hit_rate"`
	Remote  string  `json:"remote,omitempty"`
}

// String is "9/9 hits (100%), 9 from redis://host:6379".
func (s *CacheStats) String() string {
	if s == nil {
		return "no compiler cache"
	}
	msg := fmt.Sprintf("%s %d/%d hits (%.0f%%)", s.Tool, s.Hits, s.Hits+s.Misses, s.HitRate)
	if s.Remote != "" {
		msg += fmt.Sprintf(", %d from %s", s.RemoteHits, s.Remote)
	}
	return msg
}

// counters reads the tool's cumulative statistics.
func (l *Launcher) counters(ctx context.Context, env []string) (map[string]int, error) {
	argv := []string{l.Path, "--print-stats"}
	if l.Tool == "sccache" {
		argv = []string{l.Path, "--show-stats", "--stats-format=json"}
	}
	out, err := run.Output(ctx, run.Cmd{Argv: argv, Env: env, Timeout: time.Minute})
	if err != nil {
		return nil, fmt.Errorf("compiler cache statistics: %w", err)
	}
	if l.Tool == "sccache" {
		return parseSccacheStats(out)
	}
	return parseCcacheStats(out), nil
}

// parseCcacheStats reads `ccache --print-stats`: one "name<TAB>value" per line.
func parseCcacheStats(out []byte) map[string]int {
	m := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			m[k] = n
		}
	}
	return m
}

// parseSccacheStats reads `sccache --show-stats --stats-format=json`, summing the
// per-language hit and miss counts.
func parseSccacheStats(out []byte) (map[string]int, error) {
	var doc struct {
		Stats struct {
			CacheHits   struct{ Counts map[string]int } `json:"cache_hits"`
			CacheMisses struct{ Counts map[string]int } `json:"cache_misses"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("compiler cache statistics: sccache --show-stats: %w", err)
	}
	m := map[string]int{}
	for _, n := range doc.Stats.CacheHits.Counts {
		m["hits"] += n
	}
	for _, n := range doc.Stats.CacheMisses.Counts {
		m["misses"] += n
	}
	return m, nil
}

// statsBetween turns two counter snapshots into what happened between them.
func (l *Launcher) statsBetween(before, after map[string]int) *CacheStats {
	d := func(keys ...string) int {
		n := 0
		for _, k := range keys {
			n += after[k] - before[k]
		}
		return max(n, 0)
	}
	s := &CacheStats{Tool: l.Tool, Remote: l.Remote}
	if l.Tool == "sccache" {
		s.Hits, s.Misses = d("hits"), d("misses")
	} else {
		s.Hits = d("direct_cache_hit", "preprocessed_cache_hit")
		s.Misses = d("cache_miss")
		s.RemoteHits = d("remote_storage_hit")
	}
	if s.Hits+s.Misses > 0 {
		s.HitRate = 100 * float64(s.Hits) / float64(s.Hits+s.Misses)
	}
	return s
}

// lookPath finds prog in the directories of path (a PATH value), like exec.LookPath
// but for the build's environment rather than mpspatch's own.
func lookPath(prog, path string) string {
	if strings.ContainsRune(prog, filepath.Separator) {
		if isExecutable(prog) {
			return prog
		}
		return ""
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, prog)
		if isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func envValue(env []string, key string) string {
	v, _ := lookupEnv(env, key)
	return v
}
