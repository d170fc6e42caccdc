package cli

import "testing"

func TestReadOnlyCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"version"}, true},
		{[]string{"--json", "status", "--tree", "t"}, true},
		{[]string{"status", "t"}, true},
		{[]string{"check"}, true},
		{[]string{"check", "--tree", "t"}, true},
		{[]string{"check", "--upstream", "v2.9.1"}, false},
		{[]string{"check", "--upstream=v2.9.1"}, false},
		{[]string{"check", "--", "--upstream"}, true}, // after "--" it is not a flag
		{[]string{"audit", "--tree", "t"}, true},
		{[]string{"audit", "--write-baseline", "b.toml"}, false},
		{[]string{"apply", "--tree", "t"}, false},
		{[]string{"unapply"}, false},
		{[]string{"verify"}, false},
		{[]string{"build"}, false},
		{[]string{"run"}, false},
		{[]string{"help", "status"}, false}, // help and unplaced words: the default
		{[]string{"--bogus", "status"}, false},
		{nil, false},
	} {
		if have := readOnlyCommand(tc.args); have != tc.want {
			t.Errorf("readOnlyCommand(%q) = %v, want %v", tc.args, have, tc.want)
		}
	}
}
