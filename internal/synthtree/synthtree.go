package synthtree

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
)

// MPSDir is where the patched files live, as in PyTorch.
const MPSDir = "aten/src/ATen/mps"

// Spec says what to write.
type Spec struct {
	Files   int   // files in the tree, the MPS files included
	Bytes   int64 // about this many bytes in all
	MPS     int   // how many ~2,000-line MPS files the series patches (default 10)
	Patches int   // patches in the series (default: one per MPS file)
	Lines   int   // lines per MPS file (default 2000)
}

func (s Spec) withDefaults() Spec {
	if s.MPS <= 0 {
		s.MPS = 10
	}
	if s.Patches <= 0 {
		s.Patches = s.MPS
	}
	if s.Lines <= 0 {
		s.Lines = 2000
	}
	return s
}

// Tree is what Write wrote.
type Tree struct {
	Dir   string
	Files int
	Bytes int64
	// MPS are the paths (slash-separated, tree-relative) of the patched files.
	MPS []string
}

var words = []string{
	"Tensor", "self", "other", "out", "stride", "size", "dtype", "device", "kernel", "stream",
	"buffer", "graph", "cache", "mutex", "lock", "queue", "encoder", "result", "index", "dim",
	"scalar", "storage", "options", "impl", "context", "handle", "grad", "input", "weight", "bias",
}

// dirs is PyTorch's shape: where files go and what they are called.
var dirs = []struct {
	dir string
	ext []string
}{
	{"aten/src/ATen/native", []string{".cpp", ".h"}},
	{"aten/src/ATen/native/cpu", []string{".cpp", ".h"}},
	{"aten/src/ATen/native/cuda", []string{".cu", ".cuh", ".cpp"}},
	{"aten/src/ATen/native/mps/operations", []string{".mm"}},
	{"aten/src/ATen/native/quantized/cpu", []string{".cpp", ".h"}},
	{"aten/src/ATen/core", []string{".h", ".cpp"}},
	{"aten/src/ATen/ops", []string{".h"}},
	{"c10/core/impl", []string{".h", ".cpp"}},
	{"c10/util", []string{".h", ".cpp"}},
	{"torch/csrc/autograd/generated", []string{".cpp", ".h"}},
	{"torch/csrc/jit/passes", []string{".cpp", ".h"}},
	{"torch/csrc/distributed/c10d", []string{".cpp", ".hpp"}},
	{"torch/nn/modules", []string{".py"}},
	{"torch/_inductor/codegen", []string{".py"}},
	{"third_party/pybind11/include/pybind11/detail", []string{".h"}},
	{"third_party/protobuf/src/google/protobuf/compiler/cpp", []string{".cc", ".h"}},
	{"third_party/XNNPACK/src/f32-gemm/gen", []string{".c"}},
	{"third_party/fbgemm/src", []string{".cc", ".h"}},
	{"test/inductor", []string{".py"}},
	{"docs/source/notes", []string{".rst"}},
}

func linePool(rng *rand.Rand) []string {
	w := func() string { return words[rng.Intn(len(words))] }
	pool := make([]string, 0, 4096)
	for len(pool) < cap(pool) {
		var l string
		switch rng.Intn(8) {
		case 0:
			l = fmt.Sprintf("// %s: %s the %s of %s before %s.", w(), w(), w(), w(), w())
		case 1:
			l = fmt.Sprintf("%s %s_%s(const %s& %s, int64_t %s) {", w(), w(), w(), w(), w(), w())
		case 2:
			l = "}"
		case 3:
			l = fmt.Sprintf("  auto %s_%d = %s.%s(%s);", w(), rng.Intn(100), w(), w(), w())
		case 4:
			l = fmt.Sprintf("    TORCH_CHECK(%s.%s() == %d, \"%s must be %s\");", w(), w(), rng.Intn(8), w(), w())
		case 5:
			l = ""
		case 6:
			l = fmt.Sprintf("#include <ATen/%s/%s.h>", w(), w())
		default:
			l = fmt.Sprintf("  for (int64_t i = 0; i < %s.%s(); ++i) { %s[i] += %s[i]; }", w(), w(), w(), w())
		}
		pool = append(pool, l)
	}
	return pool
}

func mpsName(i int) string { return fmt.Sprintf("%s/MPSUnit%03d.mm", MPSDir, i) }

// mpsLines is one MPS file's base content as lines (without newlines): functions of five
// lines plus a blank, every line distinct, so every hunk's context locates exactly once.
func mpsLines(i, lines int) []string {
	stem := fmt.Sprintf("MPSUnit%03d", i)
	out := []string{"// " + stem + ".mm: part of the synthetic MPS backend.", "#include <mutex>", "", "namespace at::mps {", ""}
	for f := 0; len(out)+6 < lines; f++ {
		out = append(out,
			fmt.Sprintf("void %s::step%04d(MPSStream* stream) {", stem, f),
			fmt.Sprintf("  auto* buffer_%d = stream->commandBuffer();", f),
			fmt.Sprintf("  encode_%d(buffer_%d, state_[%d]);", f, f, f%97),
			fmt.Sprintf("  stream->commit(/*id=*/%d);", f),
			"}", "")
	}
	return append(out, "} // namespace at::mps")
}

// functionsIn counts the step functions of an MPS file of that many lines.
func functionsIn(lines int) int { return (lines - 6) / 6 }

// Write writes the tree under dir: the MPS files at their base content and the rest of the
// files spread over PyTorch-shaped directories (nested once a directory would hold more
// than 100 files).
func Write(dir string, spec Spec) (Tree, error) {
	spec = spec.withDefaults()
	t := Tree{Dir: dir}
	for i := 0; i < spec.MPS; i++ {
		rel := mpsName(i)
		data := []byte(strings.Join(mpsLines(i, spec.Lines), "\n") + "\n")
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return t, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return t, err
		}
		t.Files++
		t.Bytes += int64(len(data))
		t.MPS = append(t.MPS, rel)
	}
	filler, err := WriteFiller(dir, spec.Files-spec.MPS, spec.Bytes-t.Bytes)
	t.Files += filler.Files
	t.Bytes += filler.Bytes
	return t, err
}

// WriteFiller writes n files of about total bytes in all under dir, spread over
// PyTorch-shaped directories (nested once a directory would hold more than 100 files):
// the bulk of a synthetic tree, which no patch touches. Benchmarks that write their own
// patched files call it for the rest.
func WriteFiller(dir string, n int, total int64) (Tree, error) {
	t := Tree{Dir: dir}
	if n <= 0 {
		return t, nil
	}
	rng := rand.New(rand.NewSource(20251214))
	pool := linePool(rng)
	avg := max(total/int64(n), 64)
	perDir := (n + len(dirs) - 1) / len(dirs)
	buf := make([]byte, 0, 4*avg)
	for i := 0; i < n; i++ {
		d := dirs[i%len(dirs)]
		k := i / len(dirs)
		sub := d.dir
		if perDir > 100 {
			sub = fmt.Sprintf("%s/part%02d", d.dir, k/100)
		}
		rel := fmt.Sprintf("%s/%s_%s%d%s", sub, words[k%len(words)], words[(k/7)%len(words)], k, d.ext[k%len(d.ext)])
		size := avg/4 + rng.Int63n(avg*3/2+1)
		buf = fmt.Appendf(buf[:0], "// %s (synthetic)\n", rel)
		for int64(len(buf)) < size {
			buf = append(buf, pool[rng.Intn(len(pool))]...)
			buf = append(buf, '\n')
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return t, err
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return t, err
		}
		t.Files++
		t.Bytes += int64(len(buf))
	}
	return t, nil
}

// hunksPerPatch is how many places each patch changes in its file.
const hunksPerPatch = 3

// WriteSeries writes a series directory: `series` and spec.Patches format-patch mails.
// Patch p changes MPS file p mod MPS in three functions far apart, adding a lock as the
// first line of each; patches of the same file lock different functions, and each
// patch's index line chains from the blob the patch before it left.
func WriteSeries(pdir string, spec Spec) error {
	spec = spec.withDefaults()
	perFile := (spec.Patches + spec.MPS - 1) / spec.MPS
	funcs := functionsIn(spec.Lines)
	if perFile*hunksPerPatch > funcs {
		return fmt.Errorf("synthtree: %d patches over %d files of %d lines: not enough functions to patch", spec.Patches, spec.MPS, spec.Lines)
	}
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return err
	}
	current := map[int][]string{}
	var order []string
	for p := 0; p < spec.Patches; p++ {
		file := p % spec.MPS
		round := p / spec.MPS // how many patches this file had before
		lines, ok := current[file]
		if !ok {
			lines = mpsLines(file, spec.Lines)
		}
		// Functions round, round+perFile, round+2*perFile... spread over the file.
		stride := funcs / hunksPerPatch
		var at []int // 0-based line index of each function's header line
		for h := 0; h < hunksPerPatch; h++ {
			fn := h*stride + round
			at = append(at, indexOf(lines, fmt.Sprintf("void MPSUnit%03d::step%04d(MPSStream* stream) {", file, fn)))
		}
		name := fmt.Sprintf("%04d-lock-unit%03d-round%d.patch", p+1, file, round)
		mail, next := patchMail(p, mpsName(file), lines, at, fmt.Sprintf("  std::lock_guard<std::mutex> lock(unitMutex%d_);", round))
		if err := os.WriteFile(filepath.Join(pdir, name), []byte(mail), 0o644); err != nil {
			return err
		}
		current[file] = next
		order = append(order, name)
	}
	return os.WriteFile(filepath.Join(pdir, "series"), []byte(strings.Join(order, "\n")+"\n"), 0o644)
}

func indexOf(lines []string, want string) int {
	for i, l := range lines {
		if l == want {
			return i
		}
	}
	panic("synthtree: line not found: " + want)
}

// patchMail writes one format-patch mail inserting added after each header line in at,
// and returns it with the file's new lines.
func patchMail(p int, path string, lines []string, at []int, added string) (string, []string) {
	next := make([]string, 0, len(lines)+len(at))
	prev := 0
	for _, i := range at {
		next = append(next, lines[prev:i+1]...)
		next = append(next, added)
		prev = i + 1
	}
	next = append(next, lines[prev:]...)

	var b strings.Builder
	fmt.Fprintf(&b, "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n")
	fmt.Fprintf(&b, "From: Patch Author <author@example.com>\n")
	fmt.Fprintf(&b, "Date: Thu, 2 Jan 2025 03:%02d:%02d +0000\n", (p/60)%60, p%60)
	fmt.Fprintf(&b, "Subject: [PATCH] mps: lock %d functions of %s (patch %d)\n\n", len(at), filepath.Base(path), p+1)
	fmt.Fprintf(&b, "Lock the shared state of %s in %d functions.\n---\n", filepath.Base(path), len(at))
	fmt.Fprintf(&b, " %s | %d +++\n 1 file changed, %d insertions(+)\n\n", path, len(at), len(at))
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n", path, path)
	fmt.Fprintf(&b, "index %s..%s 100644\n", blobID(lines), blobID(next))
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", path, path)
	shift := 0
	for _, i := range at {
		lo := max(0, i-2)               // three lines of context before the insertion
		hi := min(len(lines), i+1+3)    // the header line is the last context line before it
		before := lines[lo : i+1]       // context up to and including the header
		after := lines[i+1 : hi]        // context after the inserted line
		oldStart, oldLen := lo+1, hi-lo // 1-based
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldStart, oldLen, oldStart+shift, oldLen+1)
		for _, l := range before {
			b.WriteString(" " + l + "\n")
		}
		b.WriteString("+" + added + "\n")
		for _, l := range after {
			b.WriteString(" " + l + "\n")
		}
		shift++
	}
	return b.String(), next
}

// blobID is git's object ID of a file with these lines.
func blobID(lines []string) string {
	data := strings.Join(lines, "\n") + "\n"
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil))
}
