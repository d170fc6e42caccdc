package cli

import (
	"slices"
	"testing"
)

func TestColorPrecedence(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"auto, terminal", "auto", true, nil, true},
		{"auto, pipe", "auto", false, nil, false},
		{"unset mode is auto", "", true, nil, true},
		{"NO_COLOR on a terminal", "auto", true, map[string]string{"NO_COLOR": "1"}, false},
		{"empty NO_COLOR is unset", "auto", true, map[string]string{"NO_COLOR": ""}, true},
		{"CLICOLOR_FORCE on a pipe", "auto", false, map[string]string{"CLICOLOR_FORCE": "1"}, true},
		{"FORCE_COLOR on a pipe", "auto", false, map[string]string{"FORCE_COLOR": "3"}, true},
		{"FORCE_COLOR=0", "auto", false, map[string]string{"FORCE_COLOR": "0"}, false},
		{"FORCE_COLOR=false", "auto", false, map[string]string{"FORCE_COLOR": "false"}, false},
		{"CLICOLOR_FORCE=0 leaves a terminal coloured", "auto", true, map[string]string{"CLICOLOR_FORCE": "0"}, true},
		{"NO_COLOR wins over the force variables", "auto", false, map[string]string{"NO_COLOR": "1", "FORCE_COLOR": "1", "CLICOLOR_FORCE": "1"}, false},
		{"always wins over NO_COLOR", "always", false, map[string]string{"NO_COLOR": "1"}, true},
		{"never wins over FORCE_COLOR", "never", true, map[string]string{"FORCE_COLOR": "1", "CLICOLOR_FORCE": "1"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := IOStreams{OutTTY: tt.tty, ErrTTY: tt.tty, colorMode: tt.mode, Getenv: func(k string) string { return tt.env[k] }}
			if have := s.ColorOut(); have != tt.want {
				t.Errorf("ColorOut() = %v, want %v", have, tt.want)
			}
			if have := s.ColorErr(); have != tt.want {
				t.Errorf("ColorErr() = %v, want %v", have, tt.want)
			}
		})
	}
}

// TestVerboseShowsColourVariables: -v lists every variable that decides colour.
func TestVerboseShowsColourVariables(t *testing.T) {
	have := tracedEnv([]string{"FORCE_COLOR=1", "UNRELATED=1", "CLICOLOR_FORCE=1", "NO_COLOR=1"})
	want := []string{"CLICOLOR_FORCE=1", "FORCE_COLOR=1", "NO_COLOR=1"}
	if !slices.Equal(have, want) {
		t.Errorf("tracedEnv = %q, want %q", have, want)
	}
}
