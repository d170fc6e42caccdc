package series

import (
	"strings"
	"testing"
)

func TestDiffPrefixes(t *testing.T) {
	mod := func(hdr string) string {
		return "Subject: x\n\n---\n" + hdr + "@@ -1 +1 @@\n-a\n+b\n"
	}
	tests := []struct {
		name    string
		raw     string
		want    PrefixStyle
		paths   [][2]string
		wantErr string
	}{
		{"git default", mod("diff --git a/src/x.c b/src/x.c\nindex 1..2 100644\n--- a/src/x.c\n+++ b/src/x.c\n"), GitDefault, [][2]string{{"src/x.c", "src/x.c"}}, ""},
		{"noprefix", mod("diff --git src/x.c src/x.c\nindex 1..2 100644\n--- src/x.c\n+++ src/x.c\n"), PrefixStyle{}, [][2]string{{"src/x.c", "src/x.c"}}, ""},
		{"noprefix new file", "diff --git src/new.txt src/new.txt\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ src/new.txt\n@@ -0,0 +1 @@\n+x\n", PrefixStyle{}, [][2]string{{"", "src/new.txt"}}, ""},
		{"noprefix file under a/", mod("diff --git a/x a/x\n--- a/x\n+++ a/x\n"), PrefixStyle{}, [][2]string{{"a/x", "a/x"}}, ""},
		{"default file under a/", mod("diff --git a/a/x b/a/x\n--- a/a/x\n+++ b/a/x\n"), GitDefault, [][2]string{{"a/x", "a/x"}}, ""},
		{"mnemonic", mod("diff --git c/x.c w/x.c\n--- c/x.c\n+++ w/x.c\n"), PrefixStyle{"c/", "w/"}, [][2]string{{"x.c", "x.c"}}, ""},
		{"space in name", mod("diff --git a/my file.c b/my file.c\n--- a/my file.c\t\n+++ b/my file.c\t\n"), GitDefault, [][2]string{{"my file.c", "my file.c"}}, ""},
		{"quoted", mod("diff --git \"a/na\\303\\257ve.c\" \"b/na\\303\\257ve.c\"\n--- \"a/na\\303\\257ve.c\"\n+++ \"b/na\\303\\257ve.c\"\n"), GitDefault, [][2]string{{"naïve.c", "naïve.c"}}, ""},
		{"rename noprefix", "diff --git old/x.c new/x.c\nsimilarity index 100%\nrename from old/x.c\nrename to new/x.c\n", PrefixStyle{}, [][2]string{{"old/x.c", "new/x.c"}}, ""},
		{"mode only", "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", GitDefault, [][2]string{{"x", "x"}}, ""},
		{"inconsistent", mod("diff --git a/x.c b/x.c\n--- a/y.c\n+++ b/y.c\n"), PrefixStyle{}, nil, "do not agree"},
	}
	for _, tt := range tests {
		st, heads, err := DiffPrefixes([]byte(tt.raw))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if st != tt.want {
			t.Errorf("%s: style %+v, want %+v", tt.name, st, tt.want)
		}
		for i, h := range heads {
			if i >= len(tt.paths) || h.Old != tt.paths[i][0] || h.New != tt.paths[i][1] {
				t.Errorf("%s: file %d = %q -> %q, want %v", tt.name, i, h.Old, h.New, tt.paths)
			}
		}
	}
}

// TestRewritePrefixes: a no-prefix mail creating src/new.txt becomes one that git apply
// and the engine read as src/new.txt, never new.txt.
func TestRewritePrefixes(t *testing.T) {
	raw := "Subject: x\n\n---\ndiff --git src/new.txt src/new.txt\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ src/new.txt\n@@ -0,0 +1 @@\n+--- src/new.txt\n" +
		"diff --git my dir/a.c my dir/a.c\n--- my dir/a.c\t\n+++ my dir/a.c\t\n@@ -1 +1 @@\n-a\n+b\n"
	st, heads, err := DiffPrefixes([]byte(raw))
	if err != nil || st != (PrefixStyle{}) {
		t.Fatalf("DiffPrefixes: %+v, %v", st, err)
	}
	have := string(RewritePrefixes([]byte(raw), st, heads))
	want := "Subject: x\n\n---\ndiff --git a/src/new.txt b/src/new.txt\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1 @@\n+--- src/new.txt\n" +
		"diff --git a/my dir/a.c b/my dir/a.c\n--- a/my dir/a.c\t\n+++ b/my dir/a.c\t\n@@ -1 +1 @@\n-a\n+b\n"
	if have != want {
		t.Errorf("RewritePrefixes:\n%s\nwant:\n%s", have, want)
	}
	if st, _, err := DiffPrefixes([]byte(have)); err != nil || st != GitDefault {
		t.Errorf("the rewritten mail reads as %+v, %v", st, err)
	}
}

func FuzzDiffPrefixes(f *testing.F) {
	f.Add([]byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n"))
	f.Add([]byte("diff --git x x\n--- x\n+++ x\n"))
	f.Add([]byte("diff --git \"a/\\303\" \"b/\\303\"\nrename from q\nrename to r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		st, heads, err := DiffPrefixes(raw)
		if err != nil {
			return
		}
		out := RewritePrefixes(raw, st, heads)
		// What import writes must read as git's default with the same paths.
		st2, heads2, err := DiffPrefixes(out)
		if err != nil || st2 != GitDefault || len(heads2) != len(heads) {
			t.Fatalf("rewritten %q reads as %+v %v (%d files, want %d)", out, st2, err, len(heads2), len(heads))
		}
		for i := range heads {
			if heads[i].Old != heads2[i].Old || heads[i].New != heads2[i].New {
				t.Fatalf("file %d: %q->%q became %q->%q", i, heads[i].Old, heads[i].New, heads2[i].Old, heads2[i].New)
			}
		}
	})
}
