package series

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const goodMail = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Author <author@example.invalid>
Date: Sun, 14 Dec 2025 12:00:00 +0000
Subject: [PATCH] Add a stream pool

The body explains the hazard.

Intent: thread-local MPSGraphCache::_instance_cache in aten/x.h
Test: test_linear.py::test_linear_variants
Seed: Scheduled handler provided after commit call
---
 a.txt | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/a.txt b/a.txt
index 0000000000000000000000000000000000000001..0000000000000000000000000000000000000002 100644
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
`

// mail returns goodMail with its diff path and Test trailer replaced.
func mail(path, test string) string {
	m := strings.ReplaceAll(goodMail, "a.txt", path)
	return strings.Replace(m, "test_linear.py::test_linear_variants", test, 1)
}

func TestLoadGood(t *testing.T) {
	fsys := fstest.MapFS{
		"series":              {Data: []byte("# comment\n\n0002-second.patch\n0001-first.patch\n")},
		"0001-first.patch":    {Data: []byte(goodMail)},
		"0002-second.patch":   {Data: []byte(mail("b.txt", "test_models.py::test_shared_model"))},
		"README.md":           {Data: []byte("not a patch")},
		"notes/0003-x.patch~": {Data: []byte("ignored")},
	}
	s, err := Load(fsys, ".", "mem")
	if err != nil {
		t.Fatal(err)
	}
	if have := []string{s.Patches[0].Name, s.Patches[1].Name}; have[0] != "0002-second.patch" || have[1] != "0001-first.patch" {
		t.Errorf("order: have %v, want the series file's order", have)
	}
	p := s.Patches[1]
	if p.ID != 1 || p.Slug != "first" || p.Title != "Add a stream pool" || p.Author != "Test Author <author@example.invalid>" {
		t.Errorf("header: have id=%d slug=%q title=%q author=%q", p.ID, p.Slug, p.Title, p.Author)
	}
	if have := p.Date; have != "2025-12-14T12:00:00Z" {
		t.Errorf("date: have %s", have)
	}
	intents := p.TrailerValues("intent")
	if len(intents) != 1 || intents[0].Value != "thread-local MPSGraphCache::_instance_cache in aten/x.h" || intents[0].Line != 8 {
		t.Errorf("intent trailer: have %+v, want the value on line 8", intents)
	}
	if tests := p.TrailerValues("Test"); len(tests) != 1 || tests[0].Line != 9 {
		t.Errorf("test trailer: have %+v", tests)
	}
	if len(s.Hash()) != 64 {
		t.Errorf("hash: have %q", s.Hash())
	}
	// The hash covers order and bytes: reordering changes it.
	fsys["series"] = &fstest.MapFile{Data: []byte("0001-first.patch\n0002-second.patch\n")}
	s2, err := Load(fsys, ".", "mem")
	if err != nil {
		t.Fatal(err)
	}
	if s2.Hash() == s.Hash() {
		t.Error("reordering the series did not change its hash")
	}
}

func TestLoadProblems(t *testing.T) {
	twoMails := goodMail + "\n" + goodMail
	tests := []struct {
		name  string
		files map[string]string
		want  []string // each must appear among the problems
	}{
		{"no series file", map[string]string{"0001-a.patch": goodMail},
			[]string{"series: cannot read the order file"}},
		{"listed but missing", map[string]string{"series": "0001-a.patch\n0002-b.patch\n", "0001-a.patch": goodMail},
			[]string{"series:2: 0002-b.patch is listed but cannot be read"}},
		{"unlisted", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": goodMail, "0002-b.patch": goodMail},
			[]string{"0002-b.patch: patch file is not listed in series"}},
		{"bad name", map[string]string{"series": "1-a.patch\n0002-Big_Name.patch\n"},
			[]string{"series:1: \"1-a.patch\": want a name of the form NNNN-slug.patch", "series:2: \"0002-Big_Name.patch\""}},
		{"duplicate id", map[string]string{"series": "0001-a.patch\n0001-b.patch\n", "0001-a.patch": goodMail, "0001-b.patch": goodMail},
			[]string{"series:2: ID 0001 is already used on line 1"}},
		{"listed twice", map[string]string{"series": "0001-a.patch\n0001-a.patch\n", "0001-a.patch": goodMail},
			[]string{"series:2: 0001-a.patch is listed twice"}},
		{"options after name", map[string]string{"series": "0001-a.patch -p1\n", "0001-a.patch": goodMail},
			[]string{"series:1: want one patch file name per line"}},
		{"two mails", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": twoMails},
			[]string{"0001-a.patch:25: holds 2 mails (starting on lines 1, 25)"}},
		{"ed diff", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": "From: a <a@b>\nSubject: x\n\n2c2\n< two\n---\n> TWO\n"},
			[]string{"0001-a.patch:4: looks like an ed-style or normal diff"}},
		{"context diff", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": "*** a.txt\n--- a.txt\n***************\n*** 1,3 ****\n"},
			[]string{"0001-a.patch:4: looks like a context diff"}},
		{"no diff", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": "just prose\n"},
			[]string{"0001-a.patch: no unified diff found"}},
		{"missing date", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": strings.Replace(goodMail, "Date: Sun, 14 Dec 2025 12:00:00 +0000\n", "", 1)},
			[]string{"0001-a.patch:1: missing or unreadable Date: header"}},
		{"missing from", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": strings.Replace(goodMail, "From: Test Author <author@example.invalid>\n", "", 1)},
			[]string{"missing From: header"}},
		{"not a mail", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": goodMail[strings.Index(goodMail, "Subject:"):]},
			[]string{"0001-a.patch:1: mail header: unrecognized patch header format"}},
		{"bad test trailer", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": mail("a.txt", "run the linear test")},
			[]string{"0001-a.patch:9: Test: \"run the linear test\": want FILE.py::NAME"}},
		{"no a/ b/ prefixes", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": strings.NewReplacer("a/a.txt", "src/x.c", "b/a.txt", "src/x.c").Replace(goodMail)},
			[]string{"0001-a.patch:", "prefixes \"\" and \"\", not a/ and b/"}},
		{"series-id trailer", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": strings.Replace(mail("a.txt", "test_a.py::test_b"), "Test: test_a.py::test_b\n", "Test: test_a.py::test_b\nSeries-Id: 0001\n", 1)},
			[]string{"0001-a.patch:10: Series-Id: 0001: that trailer belongs on a commit, never in a patch file"}},
		{"dotdot path", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": mail("../../etc/passwd", "test_a.py::test_b")},
			[]string{"0001-a.patch:15: ../../etc/passwd: `..` components are refused"}},
		{"git dir", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": mail(".git/hooks/post-checkout", "test_a.py::test_b")},
			[]string{".git/hooks/post-checkout: paths under .git are refused"}},
		{"nested git dir", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": mail("third_party/x/.GIT/config", "test_a.py::test_b")},
			[]string{"paths under .git are refused"}},
		{"symlink", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": symlinkMail},
			[]string{"symbolic links are refused"}},
		{"binary without data", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": binaryNoData},
			[]string{"binary change without data"}},
		{"bad hunk counts", map[string]string{"series": "0001-a.patch\n", "0001-a.patch": strings.Replace(goodMail, "@@ -1,3 +1,3 @@", "@@ -1,4 +1,3 @@", 1)},
			[]string{"0001-a.patch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for n, c := range tt.files {
				fsys[n] = &fstest.MapFile{Data: []byte(c)}
			}
			_, err := Load(fsys, ".", "mem")
			var le *LintError
			if !errors.As(err, &le) {
				t.Fatalf("have %v, want *LintError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("problems lack %q:\n%v", w, err)
				}
			}
		})
	}
}

const symlinkMail = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Author <author@example.invalid>
Date: Sun, 14 Dec 2025 12:00:00 +0000
Subject: [PATCH] Link

---
diff --git a/evil b/evil
new file mode 120000
index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111
--- /dev/null
+++ b/evil
@@ -0,0 +1 @@
+/etc/passwd
\ No newline at end of file
`

const binaryNoData = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Author <author@example.invalid>
Date: Sun, 14 Dec 2025 12:00:00 +0000
Subject: [PATCH] Bin

---
diff --git a/blob.bin b/blob.bin
index 1111111..2222222 100644
Binary files a/blob.bin and b/blob.bin differ
`

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"aten/src/ATen/mps/MPSStream.mm", true},
		{"a/.github/x", true},
		{"a/.gitignore", true},
		{"/etc/passwd", false},
		{"a/../b", false},
		{"..", false},
		{"a//b", false},
		{"./a", false},
		{"a/./b", false},
		{".git/config", false},
		{"x/.git/config", false},
		{".Git/HEAD", false},
		{`a\..\b`, false},
		{"a\x00b", false},
		{"", false},
	}
	for _, tt := range tests {
		err := CheckPath(tt.path)
		if (err == nil) != tt.ok {
			t.Errorf("CheckPath(%q): have %v, want ok=%v", tt.path, err, tt.ok)
		}
	}
}

func FuzzParsePatch(f *testing.F) {
	f.Add([]byte(goodMail))
	f.Add([]byte(symlinkMail))
	f.Add([]byte(binaryNoData))
	f.Add([]byte(goodMail + goodMail))
	f.Add([]byte("2c2\n< a\n---\n> b\n"))
	f.Add([]byte("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &Patch{Name: "0001-fuzz.patch", Raw: data}
		probs := ParsePatch(p)
		if len(probs) == 0 {
			// Whatever parses clean must name only safe paths.
			for _, f := range p.Files {
				for _, n := range []string{f.OldName, f.NewName} {
					if n != "" && CheckPath(n) != nil {
						t.Fatalf("accepted unsafe path %q", n)
					}
				}
			}
		}
	})
}

func FuzzSeriesFile(f *testing.F) {
	f.Add([]byte("0001-a.patch\n"))
	f.Add([]byte("# c\n\n0001-a.patch\n0001-a.patch\n0002-b.patch -p1\n"))
	f.Add([]byte("\xff\xfe0001-a.patch"))
	f.Fuzz(func(t *testing.T, order []byte) {
		fsys := fstest.MapFS{"series": {Data: order}, "0001-a.patch": {Data: []byte(goodMail)}}
		s, err := Load(fsys, ".", "fuzz")
		if err == nil && len(s.Patches) != 1 {
			t.Fatalf("loaded %d patches from a directory holding one", len(s.Patches))
		}
	})
}

// TestIdentityIsLoadsHash: version's fast path names the series exactly as Load does.
func TestIdentityIsLoadsHash(t *testing.T) {
	fx := newFixture(t, map[string]string{"a.txt": "one\ntwo\n"},
		genStep{slug: "first", msg: "first change", edit: func(tb testing.TB, dir string) { replaceIn(tb, dir, "a.txt", "one\n", "ONE\n") }},
		genStep{slug: "second", msg: "second change", edit: func(tb testing.TB, dir string) { replaceIn(tb, dir, "a.txt", "two\n", "TWO\n") }})
	s := mustLoad(t, fx.patches)
	hash, n, err := Identity(os.DirFS(fx.patches), ".")
	if err != nil || hash != s.Hash() || n != len(s.Patches) {
		t.Fatalf("Identity = %s, %d, %v; Load = %s, %d", hash, n, err, s.Hash(), len(s.Patches))
	}
	if err := os.WriteFile(filepath.Join(fx.patches, OrderFile), []byte("not a patch name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Identity(os.DirFS(fx.patches), "."); err == nil {
		t.Fatal("Identity of a series whose order file does not lint: want an error")
	}
}

func TestIsMailStart(t *testing.T) {
	for line, want := range map[string]bool{
		"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001":  true,
		"From 0123456789ABCDEF0123456789abcdef01234567 Mon Sep 17 00:00:00 2001":  false, // git writes lowercase
		"From 0123456789abcdef0123456789abcdef0123456 Mon Sep 17 00:00:00 2001":   false,
		"From 0123456789abcdef0123456789abcdef012345678 Mon Sep 17 00:00:00 2001": false,
		"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2002":  false,
		" From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001": false,
		"From: someone": false,
		"":              false,
	} {
		if have := isMailStart([]byte(line)); have != want {
			t.Errorf("isMailStart(%q) = %v, want %v", line, have, want)
		}
	}
}
