package pipeline

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
)

// stamp records one successful stage run.
type stamp struct {
	Stage    string            `json:"stage"`
	Digest   string            `json:"digest"`
	Inputs   map[string]string `json:"inputs,omitempty"`
	Finished time.Time         `json:"finished"`
	Detail   string            `json:"detail,omitempty"`
	Log      string            `json:"log,omitempty"`
	Report   string            `json:"report,omitempty"`
	MAC      string            `json:"mac,omitempty"`
}

// maxStamp bounds how much of a stamp file is read: stamps are small, and a planted file
// must not make the tool read without bound.
const maxStamp = 1 << 20

type stampStore struct {
	dir string
	key []byte
}

func (s *stampStore) path(stage string) string { return filepath.Join(s.dir, stage+".json") }

// mac authenticates everything in the stamp but the MAC itself.
func (s *stampStore) mac(st stamp) string {
	st.MAC = ""
	data, _ := json.Marshal(st) // a struct of strings, a map and a time: cannot fail
	m := hmac.New(sha256.New, s.key)
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

// read returns the stage's stamp when it exists, is a regular file, parses and carries a
// MAC that the key authenticates. Anything else is as if there were no stamp.
func (s *stampStore) read(stage string) (stamp, bool) {
	if len(s.key) == 0 {
		return stamp{}, false
	}
	f, err := os.Open(s.path(stage))
	if err != nil {
		return stamp{}, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return stamp{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStamp+1))
	if err != nil || len(data) > maxStamp {
		return stamp{}, false
	}
	var st stamp
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&st) != nil || st.Stage != stage {
		return stamp{}, false
	}
	if !hmac.Equal([]byte(st.MAC), []byte(s.mac(st))) {
		return stamp{}, false
	}
	return st, true
}

func (s *stampStore) write(st stamp) error {
	if len(s.key) == 0 {
		return nil // without a key nothing could be trusted later: keep no stamps
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	st.MAC = s.mac(st)
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(s.path(st.Stage), append(data, '\n'), atomicfile.Options{})
}

func (s *stampStore) remove(stage string) {
	_ = os.Remove(s.path(stage)) // absent is fine; a stamp that cannot be removed fails its MAC check later only if changed
}

// LoadKey returns the secret that authenticates stamps, from path, creating it (32
// random bytes, mode 0600) when it does not exist. It lives outside any tree (the user's
// config directory), so a stamp planted in a checkout cannot carry a valid MAC.
func LoadKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil && len(data) >= 32 {
		return data, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read stamp key %s: %w", path, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("make stamp key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create stamp key directory: %w", err)
	}
	if err := atomicfile.WriteBytes(path, key, atomicfile.Options{Sync: true, Mode: 0o600}); err != nil {
		return nil, fmt.Errorf("write stamp key %s: %w", path, err)
	}
	return key, nil
}
