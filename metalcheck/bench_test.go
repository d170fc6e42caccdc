package metalcheck

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// genChunk is one MPS-like unit of code: a class, methods with locks, blocks, ObjC sends,
// comments, strings; %[1]d makes names unique and %[2]s is either nothing or a pair of
// hazards (one chunk in eight, about the density of the real MPS sources).
const genChunk = `
// ---------------------------------------------------------------------------
//  Kernel%[1]d: generated for the audit benchmark.
// ---------------------------------------------------------------------------
static std::unordered_map<std::string, id<MTLComputePipelineState>> g_pipelines%[1]d;
static std::mutex g_pipelines_mutex%[1]d;

class Kernel%[1]d {
 public:
  explicit Kernel%[1]d(MPSStream* stream) : _stream(stream), _cache{} {}
  id<MTLComputePipelineState> pipeline(const std::string& name);
  void encode(id<MTLBuffer> input, id<MTLBuffer> output, NSUInteger length);

 private:
  MPSStream* _stream;
  std::unordered_map<std::string, int> _cache;
  id<MTLCommandBuffer> _commandBuffer = nil;
};

id<MTLComputePipelineState> Kernel%[1]d::pipeline(const std::string& name) {
  std::lock_guard<std::mutex> guard(g_pipelines_mutex%[1]d);
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
	return `if (!_commandBuffer) {
    _commandBuffer = [MPSCommandBuffer commandBufferFromCommandQueue:nil];
  }
  _cache["last"] = static_cast<int>(length);`
}

// genTree writes files MPS-like sources of about size bytes each under root and returns
// their paths and total size.
func genTree(tb testing.TB, root string, files, size int) ([]string, int64) {
	tb.Helper()
	var paths []string
	var total int64
	n := 0
	for f := 0; f < files; f++ {
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
		if _, err := run.Run(ctx, run.Cmd{Argv: argv, Stdout: io.Discard}); err != nil {
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
		Tokenize(src)
	}
}
