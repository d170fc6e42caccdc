package statekey

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

const keyFile = "state.key"

// keyDirs lists where the key may live, in order of preference: the user's config
// directory, else the cache directory, else a private directory under the system's
// temporary directory (a CI runner with no HOME). Candidates that cannot be named are
// skipped.
func keyDirs() []string {
	var out []string
	if d, err := os.UserConfigDir(); err == nil && d != "" {
		out = append(out, filepath.Join(d, "mpspatch"))
	}
	if d, err := os.UserCacheDir(); err == nil && d != "" {
		out = append(out, filepath.Join(d, "mpspatch"))
	}
	out = append(out, filepath.Join(os.TempDir(), "mpspatch-"+strconv.Itoa(os.Getuid())))
	return out
}

// ErrNoKey says no key exists yet: nothing in a tree can be ours.
var ErrNoKey = errors.New("no state key exists for this user")

// Load returns the first key that exists, and where it is; ErrNoKey when there is none.
func Load() ([]byte, string, error) {
	for _, d := range keyDirs() {
		p := filepath.Join(d, keyFile)
		key, err := readKey(d, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return key, p, err
	}
	return nil, "", ErrNoKey
}

// readKey reads a key file, refusing one that others could have written or read.
func readKey(dir, p string) ([]byte, error) {
	if err := checkPrivate(dir, true); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != 32 {
		return nil, fmt.Errorf("state key %s: want a regular file of 32 bytes", p)
	}
	if err := checkPrivate(p, false); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	defer f.Close()
	key, err := io.ReadAll(io.LimitReader(f, 33))
	if err != nil {
		return nil, fmt.Errorf("state key %s: %w", p, err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("state key %s: want 32 bytes, have %d", p, len(key))
	}
	return key, nil
}

// Ensure returns the user's key, creating it on first use.
func Ensure() ([]byte, error) {
	key, _, err := Load()
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, ErrNoKey) {
		return nil, err
	}
	var errs []error
	for _, d := range keyDirs() {
		key, err := createKey(d)
		if err == nil {
			return key, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("cannot create a state key (set HOME or XDG_CONFIG_HOME to a writable directory): %w", errors.Join(errs...))
}

func createKey(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := checkPrivate(dir, true); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, keyFile)
	tmp, err := os.CreateTemp(dir, keyFile+".*")
	if err != nil {
		return nil, err
	}
	_, werr := tmp.Write(key)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	// Link, not rename: when two first runs race, the first key wins and both use it.
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		os.Remove(tmp.Name())
		return nil, err
	}
	os.Remove(tmp.Name())
	return readKey(dir, p)
}

// MAC authenticates body for one use of the key: domain ("mpspatch journal v3", "mpspatch
// run stamp v1") keeps a MAC made for one kind of state from verifying another.
func MAC(key []byte, domain string, body []byte) []byte {
	m := NewMAC(key, domain)
	m.Write(body)
	return m.Sum(nil)
}

// NewMAC is MAC for a body that is written in pieces (the journal's header and each
// file's content, which are never joined in memory): write them in order, then Sum(nil).
func NewMAC(key []byte, domain string) hash.Hash {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	return m
}

// Equal compares two MACs in constant time; an empty MAC never verifies.
func Equal(a, b []byte) bool { return hmac.Equal(a, b) && !bytes.Equal(a, nil) }
