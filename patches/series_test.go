package patches_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/metalcheck"
	"github.com/mpspatch/mpspatch/patches"
)

// wantOrder is the apply order of the series. 0009 fixes a problem 0001 introduces, so it
// follows 0001 (IDs are permanent, order lives in the series file).
var wantOrder = []string{
	"0001-stream-pool.patch",
	"0009-guard-current-stream.patch",
	"0002-per-stream-locking.patch",
	"0003-thread-local-graph-cache.patch",
	"0004-sync-current-stream.patch",
	"0005-shader-library-lock.patch",
	"0006-profiler-singleton.patch",
	"0007-linear-mm-rewrite.patch",
	"0008-allocator-scalar-stream.patch",
	"0010-event-current-stream.patch",
	"0011-stream-wait-unlocked.patch",
	"0012-device-synchronize-all-streams.patch",
	"0013-events-on-named-stream.patch",
	"0014-allocator-stream-pools.patch",
	"0015-shader-library-thread-cache.patch",
	"0016-bounded-thread-caches.patch",
	"0017-profiler-maps-and-encoders.patch",
	"0018-default-stream-unless-opted-in.patch",
	"0019-sync-without-barrier.patch",
	"0020-event-values-monotonic.patch",
	"0021-encoder-stand-ins-off-queue.patch",
	"0022-profiler-executions-per-thread.patch",
	"0023-python-stream-api.patch",
	"0024-stream-debug-mode.patch",
	"0025-allocator-atomic-ids.patch",
	"0026-allocator-shared-heaps.patch",
	"0027-allocator-trim-other-streams.patch",
	"0028-allocator-events-on-caller-stream.patch",
	"0029-serialise-first-compile.patch",
	"0030-linear-addmm.patch",
	"0031-profiler-toggle-mid-operation.patch",
}

// v291Blobs are the git blob IDs of the files the series touches at PyTorch v2.9.1
// (d38164a545b4a4e4e0cf73ce67173f70574890b6), as listed in shared/v291-base.md.
var v291Blobs = map[string]string{
	"aten/src/ATen/mps/MPSStream.h":                       "10627cfc36b807b15590ba9ba464c314ba414037",
	"aten/src/ATen/mps/MPSStream.mm":                      "71325bd69e1df12611e162b41440bce7a950679b",
	"aten/src/ATen/mps/MPSHooks.mm":                       "34fbd31af91da4736b804ec5ea976d7a444062ee",
	"aten/src/ATen/mps/MPSGuardImpl.mm":                   "a267b40f5244a7671885148c4552df933fe24769",
	"aten/src/ATen/mps/MPSGuardImpl.h":                    "008a8d57f3df663970f065f2c0851ad4b23f0e2a",
	"aten/src/ATen/mps/MPSProfiler.mm":                    "a91574c56c52d76e6de347e53267d60198c76bd9",
	"aten/src/ATen/mps/MPSAllocator.mm":                   "c8b3453fc81dd3e76c25bb0fe648d6e4bdc336c7",
	"aten/src/ATen/mps/MPSEvent.mm":                       "ac4646141f0ed8d0bc7a78acd34ec8ec41b7aec7",
	"aten/src/ATen/mps/MPSEvent.h":                        "379f65a3275aed186168c0fdf76e323954de22be",
	"aten/src/ATen/mps/MPSAllocator.h":                    "1132ca6219cdfc21169e0fd034eed1f147c2bef0",
	"aten/src/ATen/mps/MPSAllocatorInterface.h":           "996c84a8b87f504f2afc2f1fc4a69c0c44ef2bcf",
	"aten/src/ATen/mps/MPSProfiler.h":                     "c1cb9090fc4af77eef1590aebdb85b583e70e2f9",
	"aten/src/ATen/native/mps/operations/RenormKernel.mm": "8e787f6fc041fbe580f237947c1805097cc00605",
	"aten/src/ATen/native/mps/OperationUtils.h":           "f9cd28ca06fa80688883e8b30c6aabedd08b8252",
	"aten/src/ATen/native/mps/OperationUtils.mm":          "bf3e94207e25b48aa98986887a767379be63f2ad",
	"aten/src/ATen/native/mps/MetalShaderLibrary.h":       "535edd29ebd7ada7e78fadf8665fefeb3844865b",
	"aten/src/ATen/native/mps/operations/Linear.mm":       "219086edd8e371577c9f20b799189bcb613c3d87",
	"torch/csrc/mps/Module.cpp":                           "51c77aba6d765ccedb26740640c2ab93534f592b",
	"torch/mps/__init__.py":                               "cdbf6b16ac443ede0abdb6f3935623886fc7aff8",
}

func loadSeries(t *testing.T) *series.Series {
	t.Helper()
	s, err := series.Load(patches.FS, ".", "embedded")
	if err != nil {
		t.Fatalf("load embedded series: %v", err)
	}
	return s
}

func TestSeriesOrder(t *testing.T) {
	s := loadSeries(t)
	var have []string
	for _, p := range s.Patches {
		have = append(have, p.Name)
	}
	if strings.Join(have, "\n") != strings.Join(wantOrder, "\n") {
		t.Errorf("series order:\nhave %q\nwant %q", have, wantOrder)
	}
}

// TestIndexChain checks the blob IDs on the patches' index lines: the first patch that
// touches a file must start from its v2.9.1 blob, and each later patch from the blob the
// previous one left. A reordered series or a patch exported from the wrong base fails here.
func TestIndexChain(t *testing.T) {
	s := loadSeries(t)
	current := map[string]string{}
	for k, v := range v291Blobs {
		current[k] = v
	}
	for _, p := range s.Patches {
		for _, f := range p.Files {
			name := f.OldName
			t.Run(p.Name+"/"+name, func(t *testing.T) {
				have, want := f.OldOIDPrefix, current[name]
				if want == "" {
					t.Fatalf("touches %s, which is not a v2.9.1 base file of the series", name)
				}
				if have != want {
					t.Errorf("index starts from %s, want %s", have, want)
				}
				if len(f.NewOIDPrefix) != 40 {
					t.Errorf("index line carries %q, want a full 40-digit blob ID", f.NewOIDPrefix)
				}
			})
			current[name] = f.NewOIDPrefix
		}
	}
}

var suiteDefRE = regexp.MustCompile(`(?m)^\s*def (test_[A-Za-z0-9_]+)\(`)

// TestTrailers checks that every patch explains itself with at least one Intent, Test and
// Seed trailer, that every Intent parses, and that every Test names a test that exists in
// verify/suites.
func TestTrailers(t *testing.T) {
	s := loadSeries(t)
	defined := map[string]bool{}
	for _, p := range s.Patches {
		t.Run(p.Name, func(t *testing.T) {
			for _, key := range []string{"Intent", "Test", "Seed"} {
				if len(p.TrailerValues(key)) == 0 {
					t.Errorf("no %s: trailer", key)
				}
			}
			for _, tr := range p.TrailerValues("Intent") {
				if _, err := metalcheck.ParseIntent(tr.Value); err != nil {
					t.Errorf("line %d: %v", tr.Line, err)
				}
			}
			for _, tr := range p.TrailerValues("Test") {
				file, fn, ok := strings.Cut(tr.Value, "::")
				if !ok {
					t.Errorf("line %d: Test: %q names no function", tr.Line, tr.Value)
					continue
				}
				key := file + "::" + fn
				if _, seen := defined[file+"::"]; !seen {
					src, err := os.ReadFile(filepath.Join("..", "verify", "suites", file))
					if err != nil {
						t.Errorf("line %d: read suite for %q: %v", tr.Line, tr.Value, err)
						continue
					}
					defined[file+"::"] = true
					for _, m := range suiteDefRE.FindAllStringSubmatch(string(src), -1) {
						defined[file+"::"+m[1]] = true
					}
				}
				if !defined[key] {
					t.Errorf("line %d: Test: %q: no such test in verify/suites/%s", tr.Line, tr.Value, file)
				}
			}
		})
	}
}

// TestAuditBaselineIsSound: the baseline that travels with the series parses, names only
// rules that exist, and gives each accepted finding a reason.
func TestAuditBaselineIsSound(t *testing.T) {
	data, err := patches.FS.ReadFile(patches.AuditBaseline)
	if err != nil {
		t.Fatal(err)
	}
	b, err := metalcheck.ParseBaseline(patches.AuditBaseline, data)
	if err != nil {
		t.Fatal(err)
	}
	reasons := b.Reasons()
	if len(reasons) == 0 {
		t.Fatal("the baseline accepts nothing: remove it or say why it is empty")
	}
	for key, why := range reasons {
		if len(strings.Fields(why)) < 5 {
			t.Errorf("%s: reason %q is too short to explain anything", key, why)
		}
	}
}
