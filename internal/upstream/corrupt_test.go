package upstream

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// A damaged cache entry is noticed, discarded and fetched again, with a warning; the
// answer is the one an intact cache gives, and the next run finds the cache healed. The
// damage: the pack holding a touched blob truncated, or overwritten with garbage, or that
// blob stored as an object file whose content is another object's (content that does not
// hash to its ID, which git itself does not notice on reading).
func TestDamagedCacheIsRefetched(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	damage := map[string]func(t *testing.T, repo, victim, other string){
		"truncated pack": func(t *testing.T, repo, victim, _ string) {
			pack := packHolding(t, repo, victim)
			data, err := os.ReadFile(pack)
			if err != nil {
				t.Fatal(err)
			}
			writeOver(t, pack, data[:len(data)/2])
		},
		"garbage pack": func(t *testing.T, repo, victim, _ string) {
			writeOver(t, packHolding(t, repo, victim), []byte("garbage\n"))
		},
		"content of another object": func(t *testing.T, repo, victim, other string) {
			pack := packHolding(t, repo, victim)
			// The other blob, as git stores it loose, under the victim's name; the pack
			// that held the victim gone.
			scratch := t.TempDir()
			gitIn(t, scratch, "init", "-q", "--bare", ".")
			data := gitIn(t, repo, "cat-file", "blob", other)
			oid := strings.TrimSpace(gitInStdin(t, scratch, data, "hash-object", "-w", "--stdin"))
			loose, err := os.ReadFile(filepath.Join(scratch, "objects", oid[:2], oid[2:]))
			if err != nil {
				t.Fatal(err)
			}
			for _, ext := range []string{".pack", ".idx", ".promisor", ".rev"} {
				os.Remove(strings.TrimSuffix(pack, ".pack") + ext)
			}
			os.MkdirAll(filepath.Join(repo, "objects", victim[:2]), 0o755)
			writeOver(t, filepath.Join(repo, "objects", victim[:2], victim[2:]), loose)
		},
	}
	for name, spoil := range damage {
		t.Run(name, func(t *testing.T) {
			c := fx.cache(t)
			want := cells(fx.check(t, c, "v1.1.0"))
			repo := filepath.Join(c.Dir, "upstream", repoName(fx.url))
			spoil(t, repo, fx.blobs["aten/b.cpp@v1.1.0"], fx.blobs["aten/a.cpp@v1.1.0"])

			rep := fx.check(t, c, "v1.1.0")
			if have := cells(rep); have != want {
				t.Errorf("after the damage:\nhave %s\nwant %s", have, want)
			}
			if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "is damaged") || !strings.Contains(rep.Warnings[0], "discarded it and fetched again") {
				t.Errorf("warnings %q, want one saying the cache was damaged and fetched again", rep.Warnings)
			}
			if rep := fx.check(t, c, "v1.1.0"); len(rep.Warnings) != 0 || cells(rep) != want {
				t.Errorf("the run after: warnings %q, cells %s; want a healed cache", rep.Warnings, cells(rep))
			}
		})
	}
}

// packHolding returns the pack file of the repository at repo that holds object oid.
func packHolding(t *testing.T, repo, oid string) string {
	t.Helper()
	idxs, _ := filepath.Glob(filepath.Join(repo, "objects", "pack", "*.idx"))
	for _, idx := range idxs {
		f, err := os.Open(idx)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "show-index")
		cmd.Stdin = f
		out, err := cmd.Output()
		f.Close()
		if err != nil {
			t.Fatalf("git show-index < %s: %v", idx, err)
		}
		if strings.Contains(string(out), " "+oid+" ") || strings.Contains(string(out), " "+oid+"\n") {
			return strings.TrimSuffix(idx, ".idx") + ".pack"
		}
	}
	t.Fatalf("no pack of %s holds %s", repo, oid)
	return ""
}

func writeOver(t *testing.T, path string, data []byte) {
	t.Helper()
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitIn runs git in dir, in a deterministic environment of its own (no user config),
// and returns its output; a failure fails the test with git's error output.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitInStdin(t, dir, "", args...)
}

func gitInStdin(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitcli.DeterministicEnv(t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, stderr.String())
	}
	return string(out)
}

// cells is a report's table as one line.
func cells(rep *Report) string {
	var out []string
	for _, col := range rep.Columns {
		for _, c := range col.Cells {
			out = append(out, col.Ref+":"+c.String())
		}
	}
	return strings.Join(out, " | ")
}
