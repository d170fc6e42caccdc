package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const auditTree = "../../metalcheck/testdata/tree"

func TestAuditCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	todo := filepath.Join(dir, "todo.toml")
	// --write-baseline writes every finding with a placeholder reason and exits 0.
	if code, _, stderr := runMain(t, "audit", "--tree", auditTree, "--write-baseline", todo); code != ExitOK {
		t.Fatalf("--write-baseline: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(todo)
	if err != nil {
		t.Fatal(err)
	}
	filled := filepath.Join(dir, "filled.toml")
	if err := os.WriteFile(filled, []byte(strings.ReplaceAll(string(data), "TODO: explain", "accepted in this test")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mpspatch.toml")
	if err := os.WriteFile(cfg, []byte("[audit]\nbaseline = \"filled.toml\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, []mainCase{
		{"findings fail", []string{"audit", "--tree", auditTree}, ExitCheckFailed,
			"aten/src/ATen/mps/Stream.mm:7:3: MPS003 unlocked-lazy-init: member Stream::_commandBuffer", ""},
		{"one path", []string{"audit", "--tree", auditTree, "--path", "aten/src/ATen/native/mps/Disabled.mm"}, ExitCheckFailed,
			"1 file, 5 new findings", ""},
		{"clean file", []string{"audit", "--tree", auditTree, "--path", "aten/src/ATen/mps/Stream.h"}, ExitOK, "1 file, 0 new findings", ""},
		{"todo baseline rejected", []string{"audit", "--tree", auditTree, "--baseline", todo}, ExitUsage,
			"", "todo.toml:7: finding 1: reason is \"TODO: explain\""},
		{"filled baseline", []string{"audit", "--tree", auditTree, "--baseline", filled}, ExitOK, "0 new findings, 70 accepted", ""},
		{"baseline from config", []string{"--config", cfg, "audit", "--tree", auditTree}, ExitOK, "70 accepted", ""},
		{"missing baseline", []string{"audit", "--tree", auditTree, "--baseline", filepath.Join(dir, "none.toml")}, ExitUsage, "", "read baseline"},
		{"bad format", []string{"audit", "--tree", auditTree, "--format", "xml"}, ExitUsage, "", `--format "xml"`},
		{"baseline and write-baseline", []string{"audit", "--tree", auditTree, "--baseline", filled, "--write-baseline", todo}, ExitUsage, "", "do not go together"},
		{"missing tree", []string{"audit", "--tree", filepath.Join(dir, "nope")}, ExitUsage, "", "not a directory"},
		{"missing path", []string{"audit", "--tree", auditTree, "--path", "aten/nope"}, ExitUsage, "", "aten/nope"},
		{"sarif", []string{"audit", "--tree", auditTree, "--format", "sarif"}, ExitCheckFailed, `"version": "2.1.0"`, ""},
		{"stale baseline entry", []string{"audit", "--tree", auditTree, "--baseline", "../../metalcheck/testdata/baseline.toml"}, ExitCheckFailed,
			"68 new findings, 2 accepted", "baseline.toml:17: MPS001 in aten/src/ATen/mps/Gone.mm matches no finding any more"},
	})
}

func TestAuditCommandJSON(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runMain(t, "--json", "audit", "--tree", auditTree)
	if code != ExitCheckFailed {
		t.Fatalf("exit %d, want %d: %s", code, ExitCheckFailed, stderr)
	}
	var res struct {
		Files int `json:"files"`
		New   []struct {
			Rule        string `json:"rule"`
			File        string `json:"file"`
			Line        int    `json:"line"`
			Fingerprint string `json:"fingerprint"`
		} `json:"new"`
		Accepted []any `json:"accepted"`
		Stale    []any `json:"stale"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if res.Stale == nil {
		t.Errorf("stale is missing or null, want [] without a baseline:\n%s", stdout)
	}
	if res.Files != 20 || len(res.New) != 70 || res.Accepted == nil {
		t.Errorf("have %d files, %d new, accepted %v; want 20, 70, []", res.Files, len(res.New), res.Accepted)
	}
	for _, f := range res.New {
		if f.Rule == "" || f.File == "" || f.Line < 1 || len(f.Fingerprint) != 16 {
			t.Errorf("incomplete finding %+v", f)
		}
	}
}

func TestAuditQuietHasNoProgress(t *testing.T) {
	code, _, stderr := runMain(t, "--quiet", "audit", "--tree", auditTree, "--path", "aten/src/ATen/mps/Stream.h")
	if code != ExitOK || stderr != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing on stderr", code, stderr)
	}
	_, _, stderr = runMain(t, "audit", "--tree", auditTree, "--path", "aten/src/ATen/mps/Stream.h")
	if !strings.Contains(stderr, "auditing aten/src/ATen/mps/Stream.h") {
		t.Errorf("stderr %q, want a progress line", stderr)
	}
}

// TestAuditBuiltInBaselineIsQuietElsewhere: with no baseline given, the built-in series'
// baseline applies; on a tree that is not patched v2.9.1 its entries are not reported as
// stale, and a custom series (patches.dir) gets no built-in baseline at all.
func TestAuditBuiltInBaselineIsQuietElsewhere(t *testing.T) {
	code, stdout, stderr := runMain(t, "--json", "audit", "--tree", auditTree)
	if code != ExitCheckFailed || strings.Contains(stderr, "matches no finding") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep struct {
		Stale []any `json:"stale"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Stale) != 0 {
		t.Fatalf("stale: %v, %v", rep.Stale, err)
	}
}
