package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/mpspatch/mpspatch/internal/confined"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/redact"
	"github.com/mpspatch/mpspatch/internal/suiteparam"
)

//go:embed default.toml
var defaultTOML []byte

// DefaultTOML returns the embedded default configuration, comments included.
func DefaultTOML() []byte { return bytes.Clone(defaultTOML) }

// Config is the whole of mpspatch.toml.
type Config struct {
	Upstream Upstream `toml:"upstream"`
	Patches  Patches  `toml:"patches"`
	Build    Build    `toml:"build"`
	Verify   Verify   `toml:"verify"`
	Audit    Audit    `toml:"audit"`

	// Path is the file the config was read from; empty for the embedded default.
	Path string `toml:"-"`

	// src is the document read from Path, kept so that a value found wrong only when it is
	// used (KeyError) is reported at its line.
	src []byte
}

// Upstream names the repository and the pinned base commit.
type Upstream struct {
	URL    string `toml:"url"`
	Tag    string `toml:"tag"`
	Commit string `toml:"commit"`
}

// Patches says where the series lives.
type Patches struct {
	Dir string `toml:"dir"`
}

// Build holds the settings of `mpspatch build`.
type Build struct {
	Python string            `toml:"python"`
	Args   []string          `toml:"args"`
	Jobs   int               `toml:"jobs"`
	Env    map[string]string `toml:"env"`
	LogDir string            `toml:"log_dir"`
	// Venv, when set, is the virtual environment the build uses: created when missing,
	// the tree's build requirements installed into it.
	Venv  string     `toml:"venv"`
	Cache BuildCache `toml:"cache"`
}

// BuildCache configures the compiler cache (ccache or sccache) and its shared storage.
// Secrets never live here: PasswordEnv names the environment variable holding one.
type BuildCache struct {
	Tool        string            `toml:"tool"`
	Remote      string            `toml:"remote"`
	RemoteOnly  bool              `toml:"remote_only"`
	PasswordEnv string            `toml:"password_env"`
	Dir         string            `toml:"dir"`
	Env         map[string]string `toml:"env"`
}

// Verify holds the settings of `mpspatch verify`.
type Verify struct {
	Python         string             `toml:"python"`
	Device         suiteparam.Device  `toml:"device"`
	Profile        suiteparam.Profile `toml:"profile"`
	Timeout        Duration           `toml:"timeout"`
	Threads        []int              `toml:"threads"`
	BaselinePython string             `toml:"baseline_python"`
	ReportDir      string             `toml:"report_dir"`
}

// Audit holds the settings of `mpspatch audit`.
type Audit struct {
	Paths    []string `toml:"paths"`
	Baseline string   `toml:"baseline"`
}

// Duration is a time.Duration written as a Go duration string ("5m", "90s").
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return errDuration
	}
	d.Duration = v
	return nil
}

// errDuration is the decoder's report of a value that is not a duration string. The
// decoder gives it no position, so describe finds the key and line itself.
var errDuration = errors.New("want a duration string such as \"90s\" or \"5m\"")

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Default returns the embedded default configuration.
//
// It is written out in Go rather than decoded from default.toml on each call: every
// command reads its configuration, and decoding the TOML cost each start about 0.1 ms
// and 27 page faults. TestDefaultMatchesDefaultTOML holds the two to the same values, so
// default.toml stays the documented source (`mpspatch config init` writes it out).
func Default() Config {
	return Config{
		Upstream: Upstream{
			URL:    "https://github.com/pytorch/pytorch.git",
			Tag:    "v2.9.1",
			Commit: "d38164a545b4a4e4e0cf73ce67173f70574890b6",
		},
		Build: Build{
			Python: "python3",
			Args:   []string{"-m", "pip", "install", "-e", ".", "-v", "--no-build-isolation"},
			Env:    map[string]string{},
			LogDir: ".mpspatch/logs",
			Cache:  BuildCache{Tool: "auto", Env: map[string]string{}},
		},
		Verify: Verify{
			Python:    "python3",
			Profile:   suiteparam.Quick,
			Timeout:   Duration{5 * time.Minute},
			Threads:   []int{},
			ReportDir: "mpspatch-report",
		},
		Audit: Audit{
			Paths: []string{"aten/src/ATen/mps", "aten/src/ATen/native/mps"},
		},
	}
}

// MaxSize bounds the config file: a real one is a few KiB.
const MaxSize = 1 << 20

// Load reads path on top of the defaults. Keys absent from the file keep their default.
// The file must be a regular file of at most MaxSize bytes: a FIFO or a link to a
// device is refused before it is read.
func Load(path string) (Config, error) {
	data, err := readBounded(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return Config{}, err
	}
	c.Path, c.src = path, data
	return c, nil
}

// KeyError reports err, found in key's value when it was used (a patches.dir that does not
// exist), as a config error at the place the file sets key: its file, line and column.
// With the embedded default, which no one edits, it returns err as it is.
func (c Config) KeyError(key string, err error) error {
	if c.Path == "" {
		return err
	}
	line, column := locate(c.src, key)
	return &Error{File: c.Path, Line: line, Column: column, Key: key, Msg: err.Error(), Err: err}
}

// Parse decodes data (named name in errors) on top of the defaults and validates it.
func Parse(name string, data []byte) (Config, error) {
	c, err := decode(name, data, Default())
	if err != nil {
		return Config{}, err
	}
	if err := c.validate(name); err != nil {
		// validate judges values, not text: find the line of the value it refused.
		err.Line, err.Column = locate(data, err.Key)
		return Config{}, err
	}
	return c, nil
}

func decode(name string, data []byte, base Config) (Config, error) {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	c := base
	if err := dec.Decode(&c); err != nil {
		// The decoder's messages speak of Go types; check says the same in the config's
		// terms, with the key a person should have written when it is a typo.
		if e := check(name, data); e != nil {
			return Config{}, e
		}
		return Config{}, describe(name, err)
	}
	return c, nil
}

// Error is a config problem with its position. Line is 0 only when the file does not
// set the key (a problem with the whole file, or with a default).
type Error struct {
	File   string
	Line   int
	Column int
	Key    string
	Msg    string
	// Err is the error behind Msg, when there is one (KeyError).
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	if e.Key != "" {
		return fmt.Sprintf("config %s: key %s: %s", pos, e.Key, e.Msg)
	}
	return fmt.Sprintf("config %s: %s", pos, e.Msg)
}

func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, confined.NotRegular(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: larger than %d KiB", path, MaxSize>>10)
	}
	return data, nil
}

// describe reports a decoding error that check did not explain (a syntax error, a
// number too large): the decoder's position and message, without its "toml: " prefix.
func describe(name string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return &Error{File: name, Line: row, Column: col, Key: joinKey(de.Key()), Msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		first := strict.Errors[0]
		row, col := first.Position()
		return &Error{File: name, Line: row, Column: col, Key: joinKey(first.Key()), Msg: unknownKeyMsg(first.Key())}
	}
	return &Error{File: name, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

func joinKey(k []string) string {
	s := ""
	for i, p := range k {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}

var fullSHA = lazyregexp.New(`^[0-9a-f]{40}$`)

func (c Config) validate(name string) *Error {
	if !fullSHA().MatchString(c.Upstream.Commit) {
		return &Error{File: name, Key: "upstream.commit", Msg: fmt.Sprintf("want a full 40-hex commit SHA, have %q", c.Upstream.Commit)}
	}
	if c.Upstream.URL == "" {
		return &Error{File: name, Key: "upstream.url", Msg: "must not be empty"}
	}
	if _, err := suiteparam.ParseProfile(string(c.Verify.Profile)); err != nil {
		want := quoted(suiteparam.Names(suiteparam.Profiles()))
		return &Error{File: name, Key: "verify.profile", Msg: fmt.Sprintf("want %s, have %q", suiteparam.OneOf(want...), c.Verify.Profile)}
	}
	if _, err := suiteparam.ParseDevice(string(c.Verify.Device)); err != nil {
		want := append(quoted(suiteparam.Names(suiteparam.Devices())), "empty")
		return &Error{File: name, Key: "verify.device", Msg: fmt.Sprintf("want %s, have %q", suiteparam.OneOf(want...), c.Verify.Device)}
	}
	for _, n := range c.Verify.Threads {
		if n < 1 || n > 256 {
			return &Error{File: name, Key: "verify.threads", Msg: fmt.Sprintf("thread count %d out of range 1..256", n)}
		}
	}
	if len(c.Build.Args) == 0 {
		return &Error{File: name, Key: "build.args", Msg: "must not be empty (the default is [\"-m\", \"pip\", \"install\", \"-e\", \".\", \"-v\", \"--no-build-isolation\"])"}
	}
	if c.Build.Jobs < 0 {
		return &Error{File: name, Key: "build.jobs", Msg: "must not be negative"}
	}
	return c.Build.Cache.validate(name)
}

// quoted writes each value as TOML spells a string, as the messages about a file do.
func quoted(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strconv.Quote(v)
	}
	return out
}

func (bc BuildCache) validate(name string) *Error {
	switch bc.Tool {
	case "auto", "ccache", "sccache", "none":
	default:
		return &Error{File: name, Key: "build.cache.tool", Msg: fmt.Sprintf("want \"auto\", \"ccache\", \"sccache\" or \"none\", have %q", bc.Tool)}
	}
	if bc.Remote != "" {
		u, err := url.Parse(bc.Remote)
		if err != nil || u.Scheme == "" {
			return &Error{File: name, Key: "build.cache.remote", Msg: fmt.Sprintf("want a URL such as \"redis://cache.example:6379\", have %q", redact.URL(bc.Remote))}
		}
		if _, has := u.User.Password(); has {
			return &Error{File: name, Key: "build.cache.remote", Msg: "holds a password: remove it and name the environment variable that holds it in build.cache.password_env"}
		}
		// A lone user-info part is a password to ccache (redis://SECRET@host) and a token
		// to https hosts; only beside password_env is it the user name the password goes
		// with.
		if u.User != nil && u.User.Username() != "" && bc.PasswordEnv == "" {
			return &Error{File: name, Key: "build.cache.remote", Msg: fmt.Sprintf("%s holds user-info, which ccache reads as a password (redis://SECRET@host): remove it and name the environment variable that holds the password in build.cache.password_env (a user name may stay beside it)", redact.URL(bc.Remote))}
		}
	}
	if bc.PasswordEnv != "" && bc.Remote == "" {
		return &Error{File: name, Key: "build.cache.password_env", Msg: "set, but build.cache.remote is empty"}
	}
	// Credentials come from the environment, never from a file that gets committed and
	// shared.
	for k := range bc.Env {
		if redact.IsSecretName(k) {
			return &Error{File: name, Key: "build.cache.env." + k, Msg: "looks like a secret: set it in the environment mpspatch runs in, not in the config file"}
		}
	}
	return nil
}
