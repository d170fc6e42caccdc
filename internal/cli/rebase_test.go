package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetUpstreamCommit(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name, in, ref, want, wantErr string
	}{
		{
			name: "tag and commit, comments kept",
			in:   "# top\n[upstream]\n# the pin\ntag = \"v2.9.1\"\ncommit = \"d38164a545b4a4e4e0cf73ce67173f70574890b6\"\n\n[build]\ncommit = \"not this one\"\n",
			ref:  "v2.11.0",
			want: "# top\n[upstream]\n# the pin\ntag = \"v2.11.0\"\ncommit = \"" + sha + "\"\n\n[build]\ncommit = \"not this one\"\n",
		},
		{
			name: "a branch leaves the tag alone",
			in:   "[upstream]\ntag = \"v2.9.1\"\ncommit = \"x\"\n",
			ref:  "origin/main",
			want: "[upstream]\ntag = \"v2.9.1\"\ncommit = \"" + sha + "\"\n",
		},
		{name: "no section", in: "[build]\njobs = 2\n", ref: "v2", wantErr: "no [upstream] section"},
		{name: "no commit line", in: "[upstream]\ntag = \"v1\"\n", ref: "v2", wantErr: "no commit ="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mpspatch.toml")
			if err := os.WriteFile(path, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			err := setUpstreamCommit(path, sha, tt.ref)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			have, _ := os.ReadFile(path)
			if string(have) != tt.want {
				t.Errorf("have:\n%s\nwant:\n%s", have, tt.want)
			}
		})
	}
}

// TestAuthorCommandsRefuseATreeThatIsNotACheckout: the author commands work on commits; a
// plain directory is a usage error that says what they need, not git's own message.
func TestAuthorCommandsRefuseATreeThatIsNotACheckout(t *testing.T) {
	tree := t.TempDir()
	patches := filepath.Join(t.TempDir(), "patches")
	if err := os.MkdirAll(patches, 0o755); err != nil {
		t.Fatal(err)
	}
	runCases(t, []mainCase{
		{"export", []string{"export", "--tree", tree, "--patches", patches}, ExitUsage, "", "export: " + tree + " is not a git checkout"},
		{"rebase", []string{"rebase", "--onto", "v2.10.0", "--tree", tree, "--patches", patches}, ExitUsage, "", "rebase: " + tree + " is not a git checkout"},
		{"apply --commit", []string{"apply", "--commit", "--tree", tree}, ExitUsage, "", "apply --commit: " + tree + " is not a git checkout"},
	})
}
