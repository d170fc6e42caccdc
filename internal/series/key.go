package series

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The journal a tree holds is outside input like the rest of the tree: a checkout (or a
// patch, before .mpspatch/ was refused) can carry one. mpspatch recognises its own
// journals by an HMAC keyed by a secret that lives outside every tree, in the user's
// configuration directory. A journal whose MAC does not verify — planted, copied from
// another machine, or written while the key was elsewhere (a CI job with a fresh HOME) —
// is foreign: it is reported and never replayed.

const keyFile = "journal.key"

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

// errNoKey says no key exists yet: no journal can be ours.
var errNoKey = errors.New("no journal key exists for this user")

// loadKey returns the first key that exists, and where it is.
func loadKey() ([]byte, string, error) {
	for _, d := range keyDirs() {
		p := filepath.Join(d, keyFile)
		key, err := readKey(d, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return key, p, err
	}
	return nil, "", errNoKey
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
		return nil, fmt.Errorf("journal key %s: want a regular file of 32 bytes", p)
	}
	if err := checkPrivate(p, false); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("journal key: %w", err)
	}
	defer f.Close()
	key, err := io.ReadAll(io.LimitReader(f, 33))
	if err != nil {
		return nil, fmt.Errorf("journal key %s: %w", p, err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("journal key %s: want 32 bytes, have %d", p, len(key))
	}
	return key, nil
}

// ensureKey returns the user's key, creating it on first use.
func ensureKey() ([]byte, error) {
	key, _, err := loadKey()
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, errNoKey) {
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
	return nil, fmt.Errorf("cannot create a journal key (set HOME or XDG_CONFIG_HOME to a writable directory): %w", errors.Join(errs...))
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

// journalMAC authenticates the journal's body.
func journalMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("mpspatch journal v3\x00"))
	m.Write(body)
	return m.Sum(nil)
}

func macEqual(a, b []byte) bool { return hmac.Equal(a, b) && !bytes.Equal(a, nil) }
