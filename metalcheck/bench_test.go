package metalcheck

import (
	"context"
	"errors"
	"fmt"
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// genChunk is one MPS-like unit of code: a class, methods with locks, blocks, ObjC sends,
// comments, strings; %[1]d makes names unique and %[2]s is either nothing or three
// hazards (one chunk in eight, about the density of the real MPS sources). The pipeline
// cache is guarded by the kernel object's own mutex, which is not a finding; the hazard
// locks the file's global mutex on the encode path.
const genChunk = `
// ---------------------------------------------------------------------------
//  Kernel%[1]d: generated for the audit benchmark.
// ---------------------------------------------------------------------------
static std::unordered_map<std::string, id<MTLComputePipelineState>> g_pipelines%[1]d;
static std::mutex g_pipelines_mutex%[1]d;
static thread_local std::vector<id<MTLBuffer>> t_scratch%[1]d;

class Kernel%[1]d {
 public:
  explicit Kernel%[1]d(MPSStream* stream) : _stream(stream), _cache{} {}
  id<MTLComputePipelineState> pipeline(const std::string& name);
  void encode(id<MTLBuffer> input, id<MTLBuffer> output, NSUInteger length);

 private:
  MPSStream* _stream;
  std::unordered_map<std::string, int> _cache;
  std::mutex _pipelineMutex;
  id<MTLCommandBuffer> _commandBuffer = nil;
};

id<MTLComputePipelineState> Kernel%[1]d::pipeline(const std::string& name) {
  std::lock_guard<std::mutex> guard(_pipelineMutex);
  auto it = g_pipelines%[1]d.find(name);
  if (it != g_pipelines%[1]d.end()) {
    return it->second;
  }
  NSError* error = nil;
  id<MTLFunction> fn = [library newFunctionWithName:@"kernel_%[1]d"];
  auto pso = [device newComputePipelineStateWithFunction:fn error:&error];
  TORCH_CHECK(pso, "failed to create pipeline state: ", error.localizedDescription.UTF8String);
  g_pipelines%[1]d[name] = pso;
  return pso;
}

void Kernel%[1]d::encode(id<MTLBuffer> input, id<MTLBuffer> output, NSUInteger length) {
  t_scratch%[1]d.push_back(input); // per thread: judged against every declaration of the name
  dispatch_sync_with_rethrow(_stream->queue(), ^() {
    @autoreleasepool {
      id<MTLComputeCommandEncoder> encoder = _stream->commandEncoder();
      [encoder setComputePipelineState:pipeline("add_%[1]d")];
      [encoder setBuffer:input offset:0 atIndex:0];
      [encoder setBuffer:output offset:0 atIndex:1];
      const auto shader = R"MSL(
        kernel void add_%[1]d(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
          a[i] = a[i] + 1.0f; // not C++: inside a raw string
        }
      )MSL";
      (void)shader;
      mtl_dispatch1DJob(encoder, pipeline("add_%[1]d"), length);
    }
  });
  %[2]s
}

TORCH_IMPL_FUNC(kernel_%[1]d_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {
  using namespace mps;
  MPSStream* stream = getCurrentMPSStream();
  auto cachedGraph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>("kernel_%[1]d", [&](auto mpsGraph, auto newCachedGraph) {
    newCachedGraph->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, self);
    newCachedGraph->outputTensor_ = [mpsGraph identityWithTensor:newCachedGraph->inputTensor_ name:nil];
  });
  auto feeds = dictionaryFromPlaceholders(Placeholder(cachedGraph->inputTensor_, self));
  for (int i = 0; i < 4; ++i) {
    if (i == 3 && self.numel() > (1 << 20)) {
      break;
    }
  }
  runMPSGraph(stream, cachedGraph->graph(), feeds, Placeholder(cachedGraph->outputTensor_, output));
}
`

func genHazard(n int) string {
	if n%8 != 0 {
		return "// no hazard in this chunk"
	}
	return fmt.Sprintf(`if (!_commandBuffer) {
    _commandBuffer = [MPSCommandBuffer commandBufferFromCommandQueue:nil];
  }
  _cache["last"] = static_cast<int>(length);
  std::lock_guard<std::mutex> hot(g_pipelines_mutex%d);`, n)
}

// genTree writes files MPS-like sources of about size bytes each under root and returns
// their paths and total size. Names are unique across the tree.
func genTree(tb testing.TB, root string, files, size int) ([]string, int64) {
	return genTreeNames(tb, root, files, size, false)
}

// genTreeNames is genTree; with repeat, every file declares the same names (file-static
// caches and mutexes, classes), as the real MPS operator files repeat names like
// kernel_mutex: the case that made judging quadratic in the number of declarations.
func genTreeNames(tb testing.TB, root string, files, size int, repeat bool) ([]string, int64) {
	tb.Helper()
	var paths []string
	var total int64
	n := 0
	for f := 0; f < files; f++ {
		if repeat {
			n = 0
		}
		dir := "aten/src/ATen/native/mps/operations"
		if f%5 == 0 {
			dir = "aten/src/ATen/mps"
		}
		var sb strings.Builder
		sb.WriteString("//  Copyright: generated test input.\n#include <ATen/mps/MPSStream.h>\n#include <mutex>\n\nnamespace at::native {\n")
		for sb.Len() < size {
			fmt.Fprintf(&sb, genChunk, n, genHazard(n))
			n++
		}
		sb.WriteString("} // namespace at::native\n")
		p := filepath.Join(root, dir, fmt.Sprintf("Gen%03d.mm", f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, p)
		total += int64(sb.Len())
	}
	return paths, total
}

// BenchmarkAudit audits a generated tree of 500 files (~30 MB) and compares with reading
// the same files with /bin/cat (started through internal/run, output discarded). Metrics:
// audit-MB/s, cat-MB/s, and x-cat, the audit's time over cat's (target: at most 10).
func BenchmarkAudit(b *testing.B) {
	root := b.TempDir()
	paths, total := genTree(b, root, 500, 60_000)
	ctx := context.Background()
	argv := append([]string{"/bin/cat"}, paths...)
	findings := 0
	var auditT, catT time.Duration
	b.SetBytes(total)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rep, err := Audit(ctx, Options{Root: root})
		if err != nil {
			b.Fatal(err)
		}
		auditT += time.Since(start)
		findings = len(rep.Findings)

		b.StopTimer()
		start = time.Now()
		if _, err := run.Run(ctx, run.Cmd{Argv: argv}); err != nil { // stdout: /dev/null
			b.Fatal(err)
		}
		catT += time.Since(start)
		b.StartTimer()
	}
	mb := float64(total) / 1e6 * float64(b.N)
	b.ReportMetric(mb/auditT.Seconds(), "audit-MB/s")
	b.ReportMetric(mb/catT.Seconds(), "cat-MB/s")
	b.ReportMetric(auditT.Seconds()/catT.Seconds(), "x-cat")
	b.ReportMetric(float64(findings), "findings")
}

// BenchmarkTokenize measures the tokenizer alone on one generated file.
func BenchmarkTokenize(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1_000_000; i++ {
		fmt.Fprintf(&sb, genChunk, i, genHazard(i))
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cxx.Tokenize(src)
	}
}

// buildMpspatch builds the command into a temporary directory, so the benchmark times the
// binary users run, start-up included. MPSPATCH_BIN names a binary to use instead (a
// machine without the Go toolchain runs a test binary built with go test -c).
func buildMpspatch(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("MPSPATCH_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "mpspatch")
	if _, err := run.Run(context.Background(), run.Cmd{Argv: []string{"go", "build", "-o", bin, "../cmd/mpspatch"}}); err != nil {
		b.Fatalf("build mpspatch: %v", err)
	}
	return bin
}

// auditTree is one generated tree of the growth benchmark.
type auditTree struct {
	name      string
	root      string
	paths     []string
	mb        float64
	proc, cat []time.Duration // per iteration: whole-process audit, /bin/cat
	inProc    []time.Duration // per iteration: metalcheck.Audit in this process
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

// BenchmarkAuditGrowth times `mpspatch audit --tree T` as a whole process (start-up, text
// output to /dev/null) interleaved with `/bin/cat` of the same files, on trees of
// 10, 30 and 100 files of about 1,550 lines (64 KB) each, once with names unique across
// the tree and once with every file repeating the same file-static names. Per tree it
// reports the median milliseconds per MB of the process and of the in-process audit, and
// x-cat (process audit over cat, target at most 5 at 100 files); then growth-*: the
// time per MB at 100 files over that at 10 (target at most 1.3). The whole-process
// growth includes the fixed start-up, which weighs more on the 0.6 MB tree, so the
// in-process growth is the one that shows the algorithm is linear.
// auditBenchRoot is where a generated tree goes: a temporary directory, or
// $MPSPATCH_AUDIT_TREES/name when that is set, so that the trees stay to be audited again
// by hand (CPU time, perf) after the benchmark.
func auditBenchRoot(b *testing.B, name string) string {
	if d := os.Getenv("MPSPATCH_AUDIT_TREES"); d != "" {
		p := filepath.Join(d, name)
		if err := os.RemoveAll(p); err != nil {
			b.Fatal(err)
		}
		return p
	}
	return b.TempDir()
}

func BenchmarkAuditGrowth(b *testing.B) {
	bin := buildMpspatch(b)
	ctx := context.Background()
	var trees []*auditTree
	for _, repeat := range []bool{false, true} {
		for _, files := range []int{10, 30, 100} {
			kind := "unique"
			if repeat {
				kind = "repeat"
			}
			name := fmt.Sprintf("%s-%d", kind, files)
			t := &auditTree{name: name, root: auditBenchRoot(b, name)}
			var total int64
			t.paths, total = genTreeNames(b, t.root, files, 64_000, repeat)
			t.mb = float64(total) / 1e6
			trees = append(trees, t)
		}
	}
	cwd := b.TempDir() // no mpspatch.toml: the default audit paths
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, t := range trees {
			start := time.Now()
			// Both processes write to /dev/null (a nil Stdout): with a writer, os/exec
			// hands the child a pipe that this process drains, which took cat, with its
			// 6.5 MB of output, about twice as long as cat >/dev/null.
			_, err := run.Run(ctx, run.Cmd{Argv: []string{bin, "audit", "--tree", t.root}, Dir: cwd})
			var ee *run.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.Result.ExitCode == 1) {
				b.Fatalf("mpspatch audit %s: %v", t.name, err)
			}
			t.proc = append(t.proc, time.Since(start))

			start = time.Now()
			if _, err := run.Run(ctx, run.Cmd{Argv: append([]string{"/bin/cat"}, t.paths...)}); err != nil {
				b.Fatal(err)
			}
			t.cat = append(t.cat, time.Since(start))

			start = time.Now()
			if _, err := Audit(ctx, Options{Root: t.root}); err != nil {
				b.Fatal(err)
			}
			t.inProc = append(t.inProc, time.Since(start))
		}
	}
	b.StopTimer()
	perMB := func(d time.Duration, t *auditTree) float64 { return float64(d) / 1e6 / t.mb }
	byName := map[string]*auditTree{}
	for _, t := range trees {
		byName[t.name] = t
		b.ReportMetric(perMB(median(t.proc), t), "ms/MB-"+t.name)
		b.ReportMetric(perMB(median(t.inProc), t), "inproc-ms/MB-"+t.name)
		b.ReportMetric(float64(median(t.proc))/float64(median(t.cat)), "x-cat-"+t.name)
	}
	for _, kind := range []string{"unique", "repeat"} {
		small, large := byName[kind+"-10"], byName[kind+"-100"]
		b.ReportMetric(perMB(median(large.proc), large)/perMB(median(small.proc), small), "growth-"+kind)
		b.ReportMetric(perMB(median(large.inProc), large)/perMB(median(small.inProc), small), "inproc-growth-"+kind)
	}
}
