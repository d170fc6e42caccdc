package suiteparam

import (
	"fmt"
	"slices"
	"strings"
)

// Device is the torch device the suites run on. The zero value is no choice made: verify
// takes the best device the interpreter has, run takes the config's and then mps.
type Device string

// The devices the suites run on.
const (
	MPS  Device = "mps"
	CUDA Device = "cuda"
	CPU  Device = "cpu"
)

// Devices lists every device, in the order help and completion show them.
func Devices() []Device { return []Device{MPS, CUDA, CPU} }

// ParseDevice returns the device s names, or the zero Device for "" (no choice made).
func ParseDevice(s string) (Device, error) {
	return parse("device", s, Devices(), true)
}

// Profile is how much of each suite runs: quick for the edit loop and CI, full for a
// release.
type Profile string

// The suite profiles.
const (
	Quick Profile = "quick"
	Full  Profile = "full"
)

// Profiles lists every profile, in the order help and completion show them.
func Profiles() []Profile { return []Profile{Quick, Full} }

// ParseProfile returns the profile s names; there is no empty profile (the config's
// default is quick).
func ParseProfile(s string) (Profile, error) {
	return parse("profile", s, Profiles(), false)
}

// UnknownError is a value outside a closed set.
type UnknownError struct {
	Set  string   // "device", "profile"
	Have string   // what was given
	Want []string // every value the set holds
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown %s %q: want %s", e.Set, e.Have, OneOf(e.Want...))
}

// OneOf writes a set's values as prose: "mps, cuda or cpu".
func OneOf(values ...string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// Names returns a set's values as strings, for completion and messages.
func Names[T ~string](set []T) []string {
	out := make([]string, len(set))
	for i, v := range set {
		out[i] = string(v)
	}
	return out
}

func parse[T ~string](name, s string, set []T, emptyOK bool) (T, error) {
	if s == "" && emptyOK {
		return "", nil
	}
	if i := slices.Index(set, T(s)); i >= 0 {
		return set[i], nil
	}
	return "", &UnknownError{Set: name, Have: s, Want: Names(set)}
}
