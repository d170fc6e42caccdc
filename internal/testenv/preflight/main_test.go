package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/testenv"
)

// machine is a machine whose PATH is bin alone (git and make as fakes, nothing else), with
// no python and no chromium.
func machine(t *testing.T) *testenv.Machine {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"git", "make"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho "+name+" 1.0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &testenv.Machine{
		Getenv: func(k string) string {
			switch k {
			case "PATH":
				return bin
			case testenv.EnvVar:
				return filepath.Join(bin, "python3")
			}
			return ""
		},
		GoVersion: "go1.26.0", GoWant: "go1.26.0",
		ChromiumPaths: []string{filepath.Join(bin, "chromium")},
	}
}

// TestPreflightCommand: on a PATH with only git and make, the command exits 1 naming every
// other need at once with the one install line; -short passes; -missing-packages lists
// the packages for .ci/run and exits 0; -packages lists them all.
func TestPreflightCommand(t *testing.T) {
	t.Parallel()
	missingPkgs := "python3 python3-torch python3-pytest python3-venv cmake ninja-build gcc ccache redis-server chromium"
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{args: nil, wantCode: 1, wantStderr: []string{
			"the tests need 10 things this machine lacks",
			"python3 ", "python3 module torch", "python3 module pytest", "python3 module venv", "cmake", "ninja",
			"cc ", "ccache", "redis-server", "chromium",
			"\n    apt-get install -y --no-install-recommends " + missingPkgs + "\n"}},
		{args: []string{"-short"}, wantCode: 0, wantStdout: "preflight: everything make check needs is here\n"},
		{args: []string{"-missing-packages"}, wantCode: 0, wantStdout: missingPkgs + "\n"},
		{args: []string{"-packages"}, wantCode: 0, wantStdout: "make git " + missingPkgs + "\n"},
		{args: []string{"extra"}, wantCode: 2, wantStderr: []string{`unexpected argument "extra"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := preflight(context.Background(), tt.args, &stdout, &stderr, machine(t))
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if tt.wantStdout != "" && stdout.String() != tt.wantStdout {
				t.Errorf("stdout:\nhave %q\nwant %q", stdout.String(), tt.wantStdout)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}
