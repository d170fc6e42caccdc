package series

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/synthtree"
)

// The synthetic tree stands in for a PyTorch checkout in the apply benchmark: tens of
// thousands of C++-looking files in PyTorch's directory shape, plus ten ~2,000-line
// files under aten/src/ATen/mps that a ten-patch series changes. Everything is derived
// from a fixed seed, so two runs build byte-identical trees.

// synthMPSDir is where the patched files live, as in PyTorch.
const synthMPSDir = "aten/src/ATen/mps"

// synthMPSFiles are the ten files the series touches, one patch each.
var synthMPSFiles = []string{
	"MPSStream.mm", "MPSAllocator.mm", "MPSDevice.mm", "MPSEvent.mm", "MPSGuardImpl.mm",
	"MPSProfiler.mm", "MPSHooks.mm", "MPSGeneratorImpl.mm", "MPSGraphCache.mm", "MPSLibrary.mm",
}

// synthMPSFile is one of the ten patched files: ~2,000 lines, every one distinct (so the
// patches' context locates exactly once), with function bodies the patches can lock.
func synthMPSFile(name string, lines int) string {
	var b strings.Builder
	stem := strings.TrimSuffix(name, ".mm")
	fmt.Fprintf(&b, "// %s: part of the synthetic MPS backend.\n#include <mutex>\n\nnamespace at::mps {\n\n", name)
	for i := 0; i < (lines-6)/6; i++ { // 5 header lines, 6 lines a function, 1 footer
		fmt.Fprintf(&b, "void %s::step%04d(MPSStream* stream) {\n", stem, i)
		fmt.Fprintf(&b, "  auto* buffer_%d = stream->commandBuffer();\n", i)
		fmt.Fprintf(&b, "  encode_%d(buffer_%d, %s_state_[%d]);\n", i, i, strings.ToLower(stem), i%97)
		fmt.Fprintf(&b, "  stream->commit(/*id=*/%d);\n", i)
		b.WriteString("}\n\n")
	}
	b.WriteString("} // namespace at::mps\n")
	return b.String()
}

// synthSeries builds the ten-patch series with real git: patch i changes file i in six
// places far apart (six hunks): it locks three functions, edits two lines and deletes one. It returns the base content of
// the ten files (keyed by tree path) and the series directory.
func synthSeries(tb testing.TB) (map[string]string, string) {
	tb.Helper()
	base := map[string]string{}
	for _, f := range synthMPSFiles {
		base[synthMPSDir+"/"+f] = synthMPSFile(f, 2000)
	}
	var steps []genStep
	for i, f := range synthMPSFiles {
		path := synthMPSDir + "/" + f
		stem := strings.TrimSuffix(f, ".mm")
		slug := "guard-" + strings.ToLower(strings.TrimPrefix(stem, "MPS"))
		steps = append(steps, genStep{
			slug: slug,
			msg:  fmt.Sprintf("mps: guard %s\n\nLock the shared state of %s.", stem, f),
			edit: func(tb testing.TB, dir string) {
				for _, fn := range []int{20 + i, 120 + i, 300 + i} {
					head := fmt.Sprintf("void %s::step%04d(MPSStream* stream) {\n", stem, fn)
					replaceIn(tb, dir, path, head, head+"  std::lock_guard<std::mutex> lock(stateMutex_);\n")
				}
				replaceIn(tb, dir, path, fmt.Sprintf("  stream->commit(/*id=*/%d);\n", 200+i), fmt.Sprintf("  stream->commitAndWait(/*id=*/%d);\n", 200+i))
				replaceIn(tb, dir, path, fmt.Sprintf("  encode_%d(buffer_%d, ", 250+i, 250+i), fmt.Sprintf("  encodeLocked_%d(buffer_%d, ", 250+i, 250+i))
				replaceIn(tb, dir, path, fmt.Sprintf("  stream->commit(/*id=*/%d);\n", 80+i), "")
			},
		})
	}
	fx := newFixture(tb, base, steps...)
	return base, fx.patches
}

// synthTree is a generated tree and what it holds.
type synthTree struct {
	dir   string
	files int
	bytes int64
}

// makeSynthTree writes a tree of about nfiles files and total bytes under dir: the ten
// MPS base files, and the rest spread over PyTorch-shaped directories, with nested
// subdirectories once a directory would hold more than 100 files.
func makeSynthTree(tb testing.TB, dir string, nfiles int, total int64, mps map[string]string) synthTree {
	tb.Helper()
	st := synthTree{dir: dir}
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		st.files++
		st.bytes += int64(len(data))
	}
	var mpsBytes int64
	for rel, content := range mps {
		write(rel, []byte(content))
		mpsBytes += int64(len(content))
	}
	filler, err := synthtree.WriteFiller(dir, nfiles-len(mps), total-mpsBytes)
	if err != nil {
		tb.Fatal(err)
	}
	st.files += filler.Files
	st.bytes += filler.Bytes
	return st
}

// gitApply runs `git apply` in dir (which is not a repository: GIT_CEILING_DIRECTORIES
// keeps git from finding one above it) and returns the process state for its rusage.
func gitApply(tb testing.TB, dir string, args ...string) *os.ProcessState {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"apply"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("git apply %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out.String())
	}
	return cmd.ProcessState
}

// seriesPaths lists the patch files of the series directory in series order, reversed
// when reverse is set (git apply -R takes them last first).
func seriesPaths(tb testing.TB, pdir string, reverse bool) []string {
	tb.Helper()
	f, err := os.Open(filepath.Join(pdir, OrderFile))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, filepath.Join(pdir, l))
	}
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// TestSynthTreeIsSound checks the generator on a small tree: the ten patches apply with
// git apply --check, mpspatch and git apply produce the same files, and both reverse to
// the base.
func TestSynthTreeIsSound(t *testing.T) {
	base, pdir := synthSeries(t)
	dir := filepath.Join(t.TempDir(), "tree")
	st := makeSynthTree(t, dir, 60, 2<<20, base)
	if st.files != 60 {
		t.Fatalf("have %d files, want 60", st.files)
	}
	if st.bytes < 1<<20 || st.bytes > 3<<20 {
		t.Fatalf("have %d bytes, want about %d", st.bytes, 2<<20)
	}
	for rel, content := range base {
		if n := strings.Count(content, "\n"); n < 1900 || n > 2100 {
			t.Fatalf("%s has %d lines, want about 2000", rel, n)
		}
	}
	gitApply(t, dir, append([]string{"--check"}, seriesPaths(t, pdir, false)...)...)

	s := mustLoad(t, pdir)
	if len(s.Patches) != 10 {
		t.Fatalf("have %d patches, want 10", len(s.Patches))
	}
	for _, p := range s.Patches {
		if len(p.Files) != 1 || len(p.Files[0].TextFragments) != 6 {
			t.Fatalf("%s: want one file with 6 hunks", p.Name)
		}
	}
	root := openRoot(t, dir)
	if _, err := Apply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{}
	for rel := range base {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) == base[rel] {
			t.Fatalf("%s unchanged after apply", rel)
		}
		ours[rel] = string(data)
	}
	if _, err := Unapply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	gitApply(t, dir, seriesPaths(t, pdir, false)...)
	for rel, want := range ours {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != want {
			t.Errorf("%s: mpspatch and git apply differ", rel)
		}
	}
	gitApply(t, dir, append([]string{"-R"}, seriesPaths(t, pdir, true)...)...)
	for rel, want := range base {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != want {
			t.Errorf("%s: not back at the base after git apply -R", rel)
		}
	}
}
