package series

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// synthDirs is PyTorch's shape: where files go, and what they are called.
var synthDirs = []struct {
	dir string
	ext []string
}{
	{"aten/src/ATen/native", []string{".cpp", ".h"}},
	{"aten/src/ATen/native/cpu", []string{".cpp", ".h"}},
	{"aten/src/ATen/native/cuda", []string{".cu", ".cuh", ".cpp"}},
	{"aten/src/ATen/native/mps/operations", []string{".mm"}},
	{"aten/src/ATen/native/mps/kernels", []string{".metal", ".h"}},
	{"aten/src/ATen/native/quantized/cpu", []string{".cpp", ".h"}},
	{"aten/src/ATen/native/sparse", []string{".cpp"}},
	{"aten/src/ATen/native/nested", []string{".cpp"}},
	{"aten/src/ATen/native/transformers/cuda", []string{".cu", ".h"}},
	{"aten/src/ATen/native/mkldnn", []string{".cpp"}},
	{"aten/src/ATen/core", []string{".h", ".cpp"}},
	{"aten/src/ATen/cuda", []string{".h", ".cpp"}},
	{"aten/src/ATen/functorch", []string{".cpp", ".h"}},
	{"aten/src/ATen/ops", []string{".h"}},
	{"c10/core/impl", []string{".h", ".cpp"}},
	{"c10/util", []string{".h", ".cpp"}},
	{"c10/cuda", []string{".h", ".cpp"}},
	{"c10/test/util", []string{".cpp"}},
	{"torch/csrc/autograd/generated", []string{".cpp", ".h"}},
	{"torch/csrc/autograd/functions", []string{".cpp", ".h"}},
	{"torch/csrc/jit/ir", []string{".cpp", ".h"}},
	{"torch/csrc/jit/passes", []string{".cpp", ".h"}},
	{"torch/csrc/jit/runtime", []string{".cpp", ".h"}},
	{"torch/csrc/distributed/c10d", []string{".cpp", ".hpp"}},
	{"torch/csrc/api/include/torch/nn/modules", []string{".h"}},
	{"torch/csrc/inductor/aoti_runtime", []string{".h", ".cpp"}},
	{"torch/csrc/profiler/standalone", []string{".cpp"}},
	{"torch/nn/modules", []string{".py"}},
	{"torch/_inductor/codegen", []string{".py"}},
	{"torch/_dynamo/variables", []string{".py"}},
	{"torch/distributed/fsdp", []string{".py"}},
	{"torch/testing/_internal", []string{".py"}},
	{"third_party/pybind11/include/pybind11/detail", []string{".h"}},
	{"third_party/fmt/include/fmt", []string{".h"}},
	{"third_party/protobuf/src/google/protobuf/compiler/cpp", []string{".cc", ".h"}},
	{"third_party/onnx/onnx/defs/math", []string{".cc", ".h"}},
	{"third_party/kineto/libkineto/src", []string{".cpp", ".h"}},
	{"third_party/XNNPACK/src/f32-gemm/gen", []string{".c"}},
	{"third_party/sleef/src/libm", []string{".c", ".h"}},
	{"third_party/googletest/googletest/src", []string{".cc"}},
	{"third_party/fbgemm/src", []string{".cc", ".h"}},
	{"test/inductor", []string{".py"}},
	{"test/distributed/fsdp", []string{".py"}},
	{"tools/autograd/templates", []string{".cpp", ".h"}},
	{"benchmarks/operator_benchmark/pt", []string{".py"}},
	{"docs/source/notes", []string{".rst"}},
}

// synthWords feed the line generator.
var synthWords = []string{
	"Tensor", "self", "other", "out", "stride", "size", "dtype", "device", "kernel", "stream",
	"buffer", "graph", "cache", "mutex", "lock", "queue", "encoder", "result", "index", "dim",
	"scalar", "storage", "options", "impl", "context", "handle", "grad", "input", "weight", "bias",
}

// synthLinePool is a fixed set of C++-looking lines that files are assembled from.
func synthLinePool(rng *rand.Rand) []string {
	w := func() string { return synthWords[rng.Intn(len(synthWords))] }
	pool := make([]string, 0, 4096)
	for len(pool) < cap(pool) {
		var l string
		switch rng.Intn(10) {
		case 0:
			l = fmt.Sprintf("// %s: %s the %s of %s before %s.", w(), w(), w(), w(), w())
		case 1:
			l = fmt.Sprintf("%s %s_%s(const %s& %s, int64_t %s) {", w(), w(), w(), w(), w(), w())
		case 2:
			l = "}"
		case 3:
			l = fmt.Sprintf("  auto %s_%d = %s.%s(%s);", w(), rng.Intn(100), w(), w(), w())
		case 4:
			l = fmt.Sprintf("  if (%s.%s() != %s) {", w(), w(), w())
		case 5:
			l = fmt.Sprintf("    TORCH_CHECK(%s.%s() == %d, \"%s must be %s\");", w(), w(), rng.Intn(8), w(), w())
		case 6:
			l = fmt.Sprintf("  return %s_%s(%s, %s);", w(), w(), w(), w())
		case 7:
			l = ""
		case 8:
			l = fmt.Sprintf("#include <ATen/%s/%s.h>", w(), w())
		default:
			l = fmt.Sprintf("  for (int64_t i = 0; i < %s.%s(); ++i) { %s[i] += %s[i]; }", w(), w(), w(), w())
		}
		pool = append(pool, l)
	}
	return pool
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
	rng := rand.New(rand.NewSource(20251214))
	pool := synthLinePool(rng)
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
	rest := nfiles - len(mps)
	if rest <= 0 {
		return st
	}
	avg := (total - mpsBytes) / int64(rest)
	perDir := (rest + len(synthDirs) - 1) / len(synthDirs)
	buf := make([]byte, 0, 4*avg)
	for i := 0; i < rest; i++ {
		d := synthDirs[i%len(synthDirs)]
		k := i / len(synthDirs) // index of the file within its directory
		sub := d.dir
		if perDir > 100 {
			sub = fmt.Sprintf("%s/part%02d", d.dir, k/100)
		}
		rel := fmt.Sprintf("%s/%s_%s%d%s", sub, synthWords[k%len(synthWords)], synthWords[(k/7)%len(synthWords)], k, d.ext[k%len(d.ext)])
		// Sizes spread from a quarter to nearly twice the average, mean avg.
		size := avg/4 + rng.Int63n(avg*3/2+1)
		buf = buf[:0]
		buf = fmt.Appendf(buf, "// %s (synthetic)\n", rel)
		for int64(len(buf)) < size {
			buf = append(buf, pool[rng.Intn(len(pool))]...)
			buf = append(buf, '\n')
		}
		write(rel, buf)
	}
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
