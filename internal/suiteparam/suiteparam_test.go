package suiteparam

import (
	"errors"
	"slices"
	"testing"
)

func TestParseDevice(t *testing.T) {
	tests := []struct {
		in      string
		want    Device
		wantErr string
	}{
		{"mps", MPS, ""},
		{"cuda", CUDA, ""},
		{"cpu", CPU, ""},
		{"", "", ""}, // no choice made
		{"MPS", "", `unknown device "MPS": want mps, cuda or cpu`},
		{"metal", "", `unknown device "metal": want mps, cuda or cpu`},
		{" cpu", "", `unknown device " cpu": want mps, cuda or cpu`},
	}
	for _, tt := range tests {
		have, err := ParseDevice(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseDevice(%q): have error %v, want %q", tt.in, err, tt.wantErr)
			}
			var ue *UnknownError
			if !errors.As(err, &ue) || ue.Have != tt.in || !slices.Equal(ue.Want, []string{"mps", "cuda", "cpu"}) {
				t.Errorf("ParseDevice(%q): have %#v, want an UnknownError naming the input and the set", tt.in, err)
			}
			continue
		}
		if err != nil || have != tt.want {
			t.Errorf("ParseDevice(%q) = %q, %v; want %q", tt.in, have, err, tt.want)
		}
	}
}

func TestParseProfile(t *testing.T) {
	for _, p := range Profiles() {
		if have, err := ParseProfile(string(p)); err != nil || have != p {
			t.Errorf("ParseProfile(%q) = %q, %v", p, have, err)
		}
	}
	for _, bad := range []string{"", "slow", "Quick"} {
		if _, err := ParseProfile(bad); err == nil {
			t.Errorf("ParseProfile(%q): have no error, want one", bad)
		} else if want := `unknown profile "` + bad + `": want quick or full`; err.Error() != want {
			t.Errorf("ParseProfile(%q): have %q, want %q", bad, err, want)
		}
	}
}

func TestOneOf(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{`"a"`, `"b"`, "empty"}, `"a", "b" or empty`}} {
		if have := OneOf(tt.in...); have != tt.want {
			t.Errorf("OneOf(%q) = %q, want %q", tt.in, have, tt.want)
		}
	}
}

// FuzzParseDevice: a value is accepted exactly when it is one of the set (or empty), and
// then comes back unchanged.
func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"", "mps", "cuda", "cpu", "MPS", "metal"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDevice(s)
		member := s == "" || slices.Contains(Devices(), Device(s))
		if (err == nil) != member {
			t.Fatalf("ParseDevice(%q): error %v, member of the set %v", s, err, member)
		}
		if err == nil && string(d) != s {
			t.Fatalf("ParseDevice(%q) = %q", s, d)
		}
	})
}
