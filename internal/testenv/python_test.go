package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePython writes an executable shell script standing in for an interpreter: it prints
// the modules named in its arguments that are not in have, as the real probe would.
func fakePython(t *testing.T, have ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python")
	script := "#!/bin/sh\nshift 2\nout=\nfor m in \"$@\"; do\n  case \" " + strings.Join(have, " ") + " \" in *\" $m \"*) ;; *) out=\"$out $m\";; esac\ndone\necho missing: $out\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindPython(t *testing.T) {
	t.Parallel()
	both := fakePython(t, "torch", "pytest")
	noTorch := fakePython(t, "pytest")
	none := fakePython(t)
	tests := []struct {
		name      string
		env       string
		want      string
		wantInErr []string
	}{
		{name: "env var with both", env: both, want: both},
		{name: "env var without torch", env: noTorch,
			wantInErr: []string{noTorch, "$MPSPATCH_PYTHON", "cannot import torch\n", "apt-get install python3-torch python3-pytest"}},
		{name: "env var with neither", env: none, wantInErr: []string{"cannot import torch or pytest"}},
		{name: "env var names nothing", env: filepath.Join(t.TempDir(), "nope"),
			wantInErr: []string{"cannot run it", ".ci/run"}},
		{name: "env var names something that is not python", env: "/bin/true",
			wantInErr: []string{"cannot run it", "did not answer the module probe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			have, err := FindPython(context.Background(), func(k string) string {
				if k == EnvVar {
					return tt.env
				}
				return ""
			})
			if len(tt.wantInErr) == 0 {
				if err != nil || have != tt.want {
					t.Fatalf("have %q, %v; want %q", have, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("have %q, want an error", have)
			}
			for _, w := range tt.wantInErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
