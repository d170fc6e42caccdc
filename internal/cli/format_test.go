package cli

import (
	"strings"
	"testing"
)

// TestClosedSetFlags: every flag that takes a value of a closed set refuses one outside it
// with a usage error (exit 2) naming the flag, the value and the whole set, as the one
// parse of that set words it; the set offered by completion is what the message lists.
func TestClosedSetFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--device", "tpu"}, `--device: unknown device "tpu": want mps, cuda or cpu`},
		{[]string{"run", "--device", "tpu"}, `--device: unknown device "tpu": want mps, cuda or cpu`},
		{[]string{"verify", "--profile", "slow"}, `--profile: unknown profile "slow": want quick or full`},
		{[]string{"audit", "--format", "xml"}, `--format "xml": want text, json or sarif`},
		{[]string{"run", "--format", "sarif"}, `--format "sarif": want text, json or markdown`},
		{[]string{"check", "--format", "json"}, `--format "json": want text or markdown`},
		// --json picks json for a command that writes it, and refuses it for one that
		// does not only through --format.
		{[]string{"audit", "--json", "--format", "markdown"}, `--format "markdown": want text, json or sarif`},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, tt.args...)
		if code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: have exit %d, %q; want exit %d and %q", tt.args, code, stderr, ExitUsage, tt.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range auditFormats {
		if have, err := parseFormat(string(f), auditFormats); err != nil || have != f {
			t.Errorf("parseFormat(%q) = %q, %v", f, have, err)
		}
	}
	if _, err := parseFormat("", checkFormats); err == nil {
		t.Error("parseFormat(\"\"): have no error, want one (the default is resolved before)")
	}
}
