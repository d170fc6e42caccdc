package pipeline

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/statekey"
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

// stampDomain separates the stamps' MACs from other uses of the state key.
const stampDomain = "mpspatch run stamp v1"

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
	return hex.EncodeToString(statekey.MAC(s.key, stampDomain, data))
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
	if !statekey.Equal([]byte(st.MAC), []byte(s.mac(st))) {
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
