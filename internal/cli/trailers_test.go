package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hand-written one-patch series changing a.txt; intent and test trailers are filled in.
func writeSeries(t *testing.T, intent, test string) (tree, patches string) {
	t.Helper()
	dir := t.TempDir()
	tree, patches = filepath.Join(dir, "tree"), filepath.Join(dir, "patches")
	mail := `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Author <author@example.invalid>
Date: Sun, 14 Dec 2025 12:00:00 +0000
Subject: [PATCH] Make the cache thread-local

Body.

Intent: ` + intent + `
Test: ` + test + `
---
diff --git a/a.h b/a.h
--- a/a.h
+++ b/a.h
@@ -1,3 +1,3 @@
 struct Cache {
-  static Cache* _instance_cache;
+  static thread_local Cache* _instance_cache;
 };
`
	for p, c := range map[string]string{
		filepath.Join(tree, "a.h"):                 "struct Cache {\n  static Cache* _instance_cache;\n};\n",
		filepath.Join(patches, "series"):           "0001-cache.patch\n",
		filepath.Join(patches, "0001-cache.patch"): mail,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tree, patches
}

func TestTrailersAreCrossChecked(t *testing.T) {
	tests := []struct {
		name, intent, test string
		wantCode           int
		want               string
	}{
		{"good", "thread-local Cache::_instance_cache in a.h", "test_linear.py::test_linear_variants", ExitOK, ""},
		{"unknown test", "thread-local Cache::_instance_cache in a.h", "test_linear.py::test_nope", ExitCheckFailed, "0001-cache.patch:9: Test: test_linear.py defines no test_nope"},
		{"unknown suite", "thread-local Cache::_instance_cache in a.h", "test_nope.py::test_x", ExitCheckFailed, "Test: no suite test_nope.py"},
		{"bad intent", "thread-locally Cache in a.h", "test_linear.py::test_linear_variants", ExitCheckFailed, "0001-cache.patch:8: Intent:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, patches := writeSeries(t, tt.intent, tt.test)
			code, stdout, stderr := runMain(t, "check", "--patches", patches)
			if code != tt.wantCode || !strings.Contains(stdout, tt.want) {
				t.Errorf("exit %d (want %d), stdout lacks %q:\n%s%s", code, tt.wantCode, tt.want, stdout, stderr)
			}
		})
	}
}

func TestApplyEvaluatesIntents(t *testing.T) {
	tree, patches := writeSeries(t, "thread-local Cache::_instance_cache in a.h", "test_linear.py::test_linear_variants")
	code, stdout, stderr := runMain(t, "apply", "--tree", tree, "--patches", patches)
	if code != ExitOK || !strings.Contains(stdout, "intents: 1 of 1 hold") {
		t.Fatalf("exit %d, stdout:\n%s%s", code, stdout, stderr)
	}
	// An intent that would not hold on the result refuses the apply (exit 1), names the
	// intent, and writes nothing.
	tree, patches = writeSeries(t, `absent "thread_local" in a.h`, "test_linear.py::test_linear_variants")
	before, _ := os.ReadFile(filepath.Join(tree, "a.h"))
	code, stdout, stderr = runMain(t, "apply", "--tree", tree, "--patches", patches)
	if code != ExitCheckFailed || !strings.Contains(stdout, `FAIL 0001-cache.patch:8: absent "thread_local" in a.h`) ||
		!strings.Contains(stdout, "nothing was written") {
		t.Fatalf("exit %d, stdout:\n%s%s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(tree, "a.h")); string(after) != string(before) {
		t.Fatal("a refused apply wrote the tree")
	}
	// --no-intents writes anyway, still exiting 1 and saying why.
	code, stdout, stderr = runMain(t, "apply", "--no-intents", "--tree", tree, "--patches", patches)
	after, _ := os.ReadFile(filepath.Join(tree, "a.h"))
	if code != ExitCheckFailed || !strings.Contains(string(after), "thread_local") || !strings.Contains(stderr, "--no-intents") {
		t.Fatalf("exit %d, a.h:\n%s\nstdout:\n%s%s", code, after, stdout, stderr)
	}
}

func TestCheckTreeEvaluatesIntentsPerPatch(t *testing.T) {
	tree, patches := writeSeries(t, "thread-local Cache::_instance_cache in a.h", "test_linear.py::test_linear_variants")
	code, stdout, stderr := runMain(t, "check", "--tree", tree, "--patches", patches)
	if code != ExitOK || !strings.Contains(stdout, "1/1 intents hold") || !strings.Contains(stdout, "the series applies to") {
		t.Fatalf("exit %d, stdout:\n%s%s", code, stdout, stderr)
	}
	// The patch still applies, but its intent does not hold: check fails (exit 1) and
	// names the intent — and nothing was written.
	tree, patches = writeSeries(t, `absent "thread_local" in a.h`, "test_linear.py::test_linear_variants")
	before, _ := os.ReadFile(filepath.Join(tree, "a.h"))
	code, stdout, stderr = runMain(t, "check", "--tree", tree, "--patches", patches)
	if code != ExitCheckFailed || !strings.Contains(stdout, "0/1 intents hold") || !strings.Contains(stdout, `FAIL 0001-cache.patch:8`) {
		t.Fatalf("exit %d, stdout:\n%s%s", code, stdout, stderr)
	}
	// It must not also claim success in the same breath.
	if strings.Contains(stdout, "the series applies") || !strings.Contains(stdout, "but 1 intent does not hold on the result; apply refuses it") {
		t.Errorf("check --tree with a failing intent says:\n%s", stdout)
	}
	if after, _ := os.ReadFile(filepath.Join(tree, "a.h")); string(after) != string(before) {
		t.Error("check --tree wrote to the tree")
	}
}
