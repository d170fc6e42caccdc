package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthorsGitAccepts: commits by authors git accepts but RFC 5322 does not (a bot's
// bracketed name and address, a "(none)" host, an empty address, quotes, non-ASCII)
// export, import and apply --commit without complaint, keep their author byte for byte,
// and re-export to the same files.
func TestAuthorsGitAccepts(t *testing.T) {
	t.Parallel()
	authors := []string{
		"dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>",
		"Joe <joe@host.(none)>",
		"Nobody <>",
		"Jörg Ünïcode <j@example.org>",
		`A "quoted" name <q@example.org>`,
		"Comma, Name <c@example.org>",
	}
	e := newEnv(t, true)
	root := t.TempDir()
	up := filepath.Join(root, "up")
	write(t, filepath.Join(up, "f.txt"), "0\n")
	e.git(up, "init", "-q")
	e.git(up, "add", "-A")
	e.git(up, "commit", "-q", "-m", "base")
	e.git(up, "tag", "v1")
	for i, a := range authors {
		write(t, filepath.Join(up, "f.txt"), strings.Repeat("x\n", i+1))
		e.git(up, "commit", "-q", "-a", "--author", a, "-m", "change "+string(rune('a'+i)))
	}
	ctx := context.Background()
	patches := filepath.Join(root, "patches")
	if _, err := Export(ctx, e.g, ExportOptions{Tree: up, Base: "v1", Dir: patches}); err != nil {
		t.Fatalf("export: %v", err)
	}
	imported := filepath.Join(root, "imported")
	if _, err := Import(context.Background(), ImportOptions{Src: patches, Dir: imported}); err != nil {
		t.Fatalf("import: %v", err)
	}
	f := &fixture{env: e, up: up, patches: imported}
	tree := f.clone("v1")
	if _, err := ApplyCommits(ctx, e.g, openRoot(t, tree), f.series(), ApplyCommitsOptions{Tree: tree}); err != nil {
		t.Fatalf("apply --commit: %v", err)
	}
	have := strings.Split(e.git(tree, "log", "--reverse", "--format=%an <%ae>", "v1..HEAD"), "\n")
	want := strings.Split(e.git(up, "log", "--reverse", "--format=%an <%ae>", "v1..HEAD"), "\n")
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("authors after the round trip:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	again := filepath.Join(root, "again")
	if _, err := Export(ctx, e.g, ExportOptions{Tree: tree, Base: "v1", Dir: again}); err != nil {
		t.Fatalf("re-export: %v", err)
	}
	first, second := dirFiles(t, patches), dirFiles(t, again)
	for name, data := range first {
		if second[name] != data {
			t.Errorf("re-exported %s differs:\n%s\nwant:\n%s", name, second[name], data)
		}
	}
	if _, err := os.Stat(filepath.Join(again, "series")); err != nil {
		t.Error(err)
	}
}

func TestParseAuthor(t *testing.T) {
	tests := []struct{ from, name, email, err string }{
		{`"dependabot[bot]" <49699333+dependabot[bot]@users.noreply.github.com>`, "dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com", ""},
		{"Joe <joe@host.(none)>", "Joe", "joe@host.(none)", ""},
		{"Nobody <>", "Nobody", "", ""},
		{"=?UTF-8?q?J=C3=B6rg?= <j@x.org>", "Jörg", "j@x.org", ""},
		{`"A \"quoted\" name" <q@x>`, `A "quoted" name`, "q@x", ""},
		{"bare@example.org", "bare@example.org", "bare@example.org", ""},
		{"bare@example.org (Old Style)", "Old Style", "bare@example.org", ""},
		{"Broken <no-end", "", "", "no >"},
		{"", "", "", "no name and no address"},
	}
	for _, tt := range tests {
		name, email, err := parseAuthor(tt.from)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseAuthor(%q): err %v, want %q", tt.from, err, tt.err)
			}
		case err != nil || name != tt.name || email != tt.email:
			t.Errorf("parseAuthor(%q) = %q, %q, %v; want %q, %q", tt.from, name, email, err, tt.name, tt.email)
		}
	}
}
