package pipeline

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/mpspatch/mpspatch/internal/confined"
	"github.com/mpspatch/mpspatch/internal/statekey"
)

// stamp records one successful stage run.
type stamp struct {
	Stage string `json:"stage"`
	// Checkout is the tree the stage ran in (confined.Identity): under the MAC, so a
	// stamp copied into another checkout, or along with a copy of this one, is not
	// taken for that checkout's.
	Checkout string            `json:"checkout"`
	Digest   string            `json:"digest"`
	Inputs   map[string]string `json:"inputs,omitempty"`
	Finished time.Time         `json:"finished"`
	Detail   string            `json:"detail,omitempty"`
	Log      string            `json:"log,omitempty"`
	Report   string            `json:"report,omitempty"`
	MAC      string            `json:"mac,omitempty"`
}

// stampDomain separates the stamps' MACs from other uses of the state key. v2 binds the
// stamp to its checkout and the apply stage to the tree's state.
const stampDomain = "mpspatch run stamp v2"

// maxStamp bounds how much of a stamp file is read: stamps are small, and a planted file
// must not make the tool read without bound.
const maxStamp = 1 << 20

type stampStore struct {
	dir      *confined.Dir
	key      []byte
	checkout string
}

func stampName(stage string) string { return stage + ".json" }

// mac authenticates everything in the stamp but the MAC itself.
func (s *stampStore) mac(st stamp) string {
	st.MAC = ""
	data, _ := json.Marshal(st) // a struct of strings, a map and a time: cannot fail
	return hex.EncodeToString(statekey.MAC(s.key, stampDomain, data))
}

// read returns the stage's stamp when it exists, is a regular file of at most maxStamp
// bytes, parses, carries a MAC that the key authenticates and was made in this checkout.
// Anything else is as if there were no stamp.
func (s *stampStore) read(stage string) (stamp, bool) {
	if len(s.key) == 0 || s.dir == nil {
		return stamp{}, false
	}
	data, err := s.dir.ReadFile(stampName(stage), maxStamp)
	if err != nil {
		return stamp{}, false
	}
	return s.decode(stage, data)
}

func (s *stampStore) decode(stage string, data []byte) (stamp, bool) {
	var st stamp
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&st) != nil || st.Stage != stage {
		return stamp{}, false
	}
	if !statekey.Equal([]byte(st.MAC), []byte(s.mac(st))) || st.Checkout != s.checkout {
		return stamp{}, false
	}
	return st, true
}

func (s *stampStore) write(st stamp) error {
	if len(s.key) == 0 || s.dir == nil {
		return nil // without a key nothing could be trusted later: keep no stamps
	}
	st.Checkout = s.checkout
	st.MAC = s.mac(st)
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return s.dir.WriteFile(stampName(st.Stage), append(data, '\n'), 0o644)
}

// remove drops a stamp; one that cannot be removed is harmless only while its digest no
// longer matches, so the failure is returned.
func (s *stampStore) remove(stage string) error {
	if s.dir == nil {
		return nil
	}
	return s.dir.Remove(stampName(stage))
}
