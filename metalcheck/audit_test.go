package metalcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const fixtureTree = "testdata/tree"

type site struct {
	Line int
	Rule string
}

// wantFindings lists every finding the fixtures must produce, per file; anything else the
// audit reports in these files is a false positive.
var wantFindings = map[string][]site{
	"aten/src/ATen/mps/Singleton.mm": {
		{11, "MPS001"}, // if (!g_widget) g_widget = new Widget();
		{19, "MPS001"}, // static member _instance == nullptr
		{33, "MPS001"}, // function-local static pointer, nullptr == w
	},
	"aten/src/ATen/mps/Containers.mm": {
		{17, "MPS002"}, // g_cache[key] = value
		{18, "MPS002"}, // g_cache.emplace
		{39, "MPS002"}, // clear() after unlock()
		{43, "MPS002"}, // [g_dict setObject:forKey:]
		{59, "MPS002"}, // function-local static vector
		{81, "MPS002"}, // member container in a method, no lock
	},
	"aten/src/ATen/mps/Stream.h": nil,
	"aten/src/ATen/mps/Stream.mm": {
		{7, "MPS003"},  // if (!_commandBuffer) { _commandBuffer = ... }
		{14, "MPS003"}, // braceless if (_commandEncoder == nil)
		{28, "MPS004"}, // endKernelCoalescing() in synchronize()
		{30, "MPS004"}, // commit() in synchronize()
		{43, "MPS004"}, // stream->commandEncoder() off the queue
		{61, "MPS009"}, // deviceSynchronize waits for the default stream only
		{65, "MPS005"}, // getDefaultMPSStream()->synchronize
	},
	"aten/src/ATen/mps/Tricky.mm": {
		{84, "MPS007"}, // #if 0
		{96, "MPS002"}, // g_map.erase, unguarded
		{97, "MPS002"}, // [g_objects addObject:], unguarded
	},
	"aten/src/ATen/mps/Callers.mm": {
		{43, "MPS002"}, // record(): putUnlocked reaches it without the lock
		// not: store (its one caller holds the lock), initTables (called by the
		// constructor), refill (by initTables and by reset under the lock)
	},
	"aten/src/ATen/mps/Pool.h": nil,
	"aten/src/ATen/mps/Pool.mm": {
		{22, "MPS006"}, // member recursive_mutex of a function-local static pool, in malloc
		{27, "MPS006"}, // the same, in free
		{42, "MPS006"}, // member shared_mutex of a library whose derived class is static
		{47, "MPS006"}, // static mutex in run*
		{52, "MPS006"}, // static shared_mutex in a pipeline getter
		{92, "MPS006"}, // after an early return that is no cache (an argument check)
		// not: cachedBytes (not a hot path), Lane::encodeCopy (lanes are many, in a
		// vector), recordStats (not a hot path), executeScratch (thread_local mutex),
		// getKernelFast and getKernelLocalCache (a thread_local cache answers first: the
		// lock is taken on a thread's first use of a key, not on every call)
	},
	"aten/src/ATen/mps/Wait.mm": {
		{11, "MPS008"}, // waitUntilCompleted under lock_guard
		{16, "MPS008"}, // commitAndWait() inside @synchronized
		{22, "MPS008"}, // dispatch_sync with a unique_lock held
		{29, "MPS008"}, // dispatch_sync onto another queue from a dispatch_sync block
		{37, "MPS008"}, // synchronize(COMMIT_AND_WAIT) under scoped_lock
		{62, "MPS010"}, // waits on the queue: no lock held (not MPS008), but MPS010
		// not: unlock before the wait, the lock's scope ended, a deferred unique_lock
		// never locked
	},
	"aten/src/ATen/mps/DeviceSync.mm": {
		{7, "MPS009"},  // deviceSynchronize: the current stream only
		{13, "MPS009"}, // synchronizeDevice: the default stream, on its queue
		{13, "MPS010"}, // ... waiting inside that stream's block
		{18, "MPS009"}, // elapsedTime: one member stream
		{23, "MPS009"}, // emptyCache: the default stream
		{53, "MPS009"}, // flushAndWait(): named so
		{57, "MPS009"}, // drain(): its definition waits outside a loop
		// not: commit on each queue then wait outside (a loop over every stream); a
		// per-stream commit; finishEach (waits in a loop), a pool's waitAll, a
		// COMMIT-only call, a device-wide helper
	},
	"aten/src/ATen/mps/QueueWait.mm": {
		{41, "MPS010"}, // synchronize dispatches itself onto its queue and waits there
		{54, "MPS010"}, // waitUntilCompleted in a dispatch_sync block
		{57, "MPS010"}, // finishWork(), whose own code waits
		{61, "MPS010"}, // condition-variable wait in a dispatch_async block
		{64, "MPS010"}, // semaphore wait
		{65, "MPS010"}, // dispatch_sync onto another queue from an async block
		{76, "MPS010"}, // issue 18's lockstep: every stream waited for in its own block
		// not: commit in the block and wait after it, synchronize(SyncType::COMMIT),
		// flushOnly (waits only in a completion handler), a completion handler's
		// wait, a global queue
	},
	"aten/src/ATen/mps/Counters.h": {
		{13, "MPS011"}, // ++s_nextId in a constructor reached only under a lane's mutex
	},
	"aten/src/ATen/mps/Counters.mm": {
		{39, "MPS011"}, // a static counter under a shard's mutex
		{40, "MPS011"}, // a member of a process-wide object under a shard's mutex
		{51, "MPS011"}, // under g_traceMutex here, under g_statsMutex in countOp
		// not: g_bytes and g_oneLock (one mutex, directly, through the only caller
		// and m.lock()), g_neverLocked (no lock anywhere), an atomic, a lane's own
		// counter, a local
	},
	"aten/src/ATen/mps/EventPool.h": nil,
	"aten/src/ATen/mps/EventPool.mm": {
		{8, "MPS012"},  // m_signalValue = 0 in the reset of a pooled Fence
		{9, "MPS012"},  // m_shared.signaledValue = 0
		{20, "MPS012"}, // fence->m_generation = 0 when the pool hands one out again
		// not: completion time and flags, a monotonic reuse, a Timer (never pooled),
		// the constructor
	},
	"aten/src/ATen/mps/Encoders.mm": {
		{7, "MPS004"},  // commandEncoder() with no lock, off the queue
		{7, "MPS013"},  // ... fetched before the dispatch_sync that uses it
		{15, "MPS013"}, // a command buffer assigned, then committed in dispatch_async
		{22, "MPS013"}, // [stream->commandBuffer() blitCommandEncoder], reported once
		{29, "MPS013"}, // returned off the queue, no caller on a queue
		// not: fetched in the block; used off any block; returned by a helper whose
		// only caller runs in a dispatch_sync block
	},
	"aten/src/ATen/native/mps/Disabled.mm": {
		{7, "MPS007"}, {10, "MPS007"}, {13, "MPS007"}, {16, "MPS007"}, {19, "MPS007"},
	},
	"aten/src/ATen/native/mps/Graph.mm": {
		{9, "MPS006"}, // g_graph_mutex.lock() in runMPSGraph
	},
	"aten/src/ATen/native/mps/Kernels.mm": {
		{10, "MPS006"}, // TORCH_IMPL_FUNC(logit_backward_out), outside operations/
		{14, "MPS006"}, // exp_kernel_mps
		{18, "MPS006"}, // _mps_linear
		{23, "MPS006"}, // cumsum_kernel, m.lock()
		// not: mpsKernelStats, build_graph_once, a local mutex in abs_out_mps
	},
	"aten/src/ATen/native/mps/operations/Encode.mm": {
		{17, "MPS006"}, // lock_guard on a static mutex in an operator
		{33, "MPS006"}, // shared_lock on a function-local static shared_mutex
	},
}

func auditFixtures(t testing.TB, workers int) *Report {
	t.Helper()
	rep, err := Audit(context.Background(), Options{Root: fixtureTree, Workers: workers})
	if err != nil {
		t.Fatalf("audit %s: %v", fixtureTree, err)
	}
	return rep
}

func TestAuditFixtures(t *testing.T) {
	rep := auditFixtures(t, 0)
	have := map[string][]site{}
	for _, f := range rep.Findings {
		have[f.File] = append(have[f.File], site{f.Line, f.Rule})
	}
	if rep.Files != len(wantFindings) {
		t.Errorf("audited %d files, want %d", rep.Files, len(wantFindings))
	}
	for file, want := range wantFindings {
		t.Run(filepath.Base(file), func(t *testing.T) {
			h := have[file]
			if len(h) == 0 && len(want) == 0 {
				return
			}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("findings in %s:\nhave %v\nwant %v", file, h, want)
				for _, f := range rep.Findings {
					if f.File == file {
						t.Logf("  %s", f)
					}
				}
			}
		})
	}
	for file := range have {
		if _, ok := wantFindings[file]; !ok {
			t.Errorf("findings in unexpected file %s: %v", file, have[file])
		}
	}
}

func TestAuditDeterministicAcrossWorkers(t *testing.T) {
	one := auditFixtures(t, 1)
	many := auditFixtures(t, 7)
	if !reflect.DeepEqual(one.Findings, many.Findings) {
		t.Errorf("findings differ between 1 and 7 workers")
	}
	if !sort.SliceIsSorted(one.Findings, func(a, b int) bool {
		x, y := one.Findings[a], one.Findings[b]
		if x.File != y.File {
			return x.File < y.File
		}
		return x.Line < y.Line
	}) {
		t.Errorf("findings are not sorted by file and line")
	}
}

// TestAuditManyFilesMatchesSerial audits a generated tree large enough for the parallel
// paths (files merged into the symbol table, in file order, as the workers finish them in
// any order; candidates judged in parallel) and compares with the serial AuditSources of the same files, with
// names repeated across files so that the order of the merge matters ("declared" cites
// the first file's declaration).
func TestAuditManyFilesMatchesSerial(t *testing.T) {
	root := t.TempDir()
	paths, _ := genTreeNames(t, root, 24, 56_000, true)
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.ToSlash(rel)] = b
	}
	want := AuditSources(files)
	cands := 0
	for name, src := range files {
		cands += len(analyze(name, src).extract().cands)
	}
	if cands < parallelJudging {
		t.Fatalf("%d candidates: too few to judge in parallel (%d)", cands, parallelJudging)
	}
	for _, workers := range []int{1, 2, 5} {
		rep, err := Audit(context.Background(), Options{Root: root, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) == 0 || !reflect.DeepEqual(rep.Findings, want) {
			t.Errorf("%d workers: %d findings, serial %d; they differ", workers, len(rep.Findings), len(want))
		}
	}
}

func TestAuditFindingFields(t *testing.T) {
	for _, f := range auditFixtures(t, 0).Findings {
		r, ok := LookupRule(f.Rule)
		switch {
		case !ok:
			t.Errorf("%s: unknown rule", f)
		case f.Name != r.Name || f.Severity != r.Severity || f.Fix != r.Fix:
			t.Errorf("%s: name/severity/fix do not match rule %s", f, r.ID)
		case f.Message == "" || f.Statement == "" || len(f.Fingerprint) != 16 || f.Col < 1:
			t.Errorf("%s: empty message, statement, fingerprint or column: %+v", f, f)
		}
	}
}

func TestAuditMissingPath(t *testing.T) {
	_, err := Audit(context.Background(), Options{Root: fixtureTree, Paths: []string{"no/such/dir"}})
	if err == nil || !strings.Contains(err.Error(), "no/such/dir") {
		t.Errorf("have %v, want an error naming no/such/dir", err)
	}
	_, err = Audit(context.Background(), Options{Root: fixtureTree, Paths: []string{"../outside"}})
	if err == nil || !strings.Contains(err.Error(), "inside it") {
		t.Errorf("have %v, want an error about a path outside the tree", err)
	}
}

func TestAuditCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Audit(ctx, Options{Root: fixtureTree}); err == nil {
		t.Errorf("a cancelled audit returned no error")
	}
}

// TestFingerprintSurvivesLineShift moves every finding down the file and expects the same
// fingerprints; editing the statement must change the fingerprint.
func TestFingerprintSurvivesLineShift(t *testing.T) {
	const name = "aten/src/ATen/mps/Containers.mm"
	src, err := os.ReadFile(filepath.Join(fixtureTree, name))
	if err != nil {
		t.Fatal(err)
	}
	base := AuditSources(map[string][]byte{name: src})
	shifted := AuditSources(map[string][]byte{name: append([]byte("// one\n// two\n\n"), src...)})
	if len(base) == 0 || len(base) != len(shifted) {
		t.Fatalf("have %d and %d findings, want the same non-zero number", len(base), len(shifted))
	}
	for i := range base {
		if shifted[i].Line != base[i].Line+3 {
			t.Errorf("finding %d: line %d after the shift, want %d", i, shifted[i].Line, base[i].Line+3)
		}
		if shifted[i].Fingerprint != base[i].Fingerprint {
			t.Errorf("finding %d (%s): fingerprint changed with a line shift", i, base[i])
		}
	}
	edited := AuditSources(map[string][]byte{name: bytes.Replace(src, []byte("g_cache[key] = value;\n  g_cache.emplace"), []byte("g_cache[key + \"x\"] = value;\n  g_cache.emplace"), 1)})
	if edited[0].Fingerprint == base[0].Fingerprint {
		t.Errorf("fingerprint did not change when the statement changed")
	}
}

func goldenResult(t *testing.T) (Result, *Baseline) {
	t.Helper()
	rep := auditFixtures(t, 0)
	b, err := LoadBaseline("testdata/baseline.toml")
	if err != nil {
		t.Fatal(err)
	}
	return b.Apply(rep.Files, rep.Findings), b
}

func checkGolden(t *testing.T, name string, have []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, have, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\nhave:\n%s", path, have)
	}
}

func TestGoldenOutputs(t *testing.T) {
	res, b := goldenResult(t)
	if len(res.Accepted) != 2 || len(res.Stale) != 1 {
		t.Fatalf("baseline accepted %d findings and left %d stale entries, want 2 and 1", len(res.Accepted), len(res.Stale))
	}
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"audit.txt", func(w *bytes.Buffer) error { return WriteText(w, res) }},
		{"audit.json", func(w *bytes.Buffer) error { return WriteJSON(w, res) }},
		{"audit.sarif", func(w *bytes.Buffer) error { return WriteSARIF(w, res, b.Reasons()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, buf.Bytes())
		})
	}
}

func TestTextFormat(t *testing.T) {
	res, _ := goldenResult(t)
	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if want := 2*len(res.New) + 1; len(lines) != want {
		t.Fatalf("have %d lines, want %d", len(lines), want)
	}
	for i, f := range res.New {
		head := lines[2*i]
		wantHead := f.File + ":" + itoa(f.Line) + ":" + itoa(f.Col) + ": " + f.Rule + " " + f.Name + ": " + f.Message
		if head != wantHead {
			t.Errorf("line %d:\nhave %q\nwant %q", 2*i+1, head, wantHead)
		}
		if !strings.HasPrefix(lines[2*i+1], "    fix: ") {
			t.Errorf("line %d: have %q, want a fix hint", 2*i+2, lines[2*i+1])
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSARIFValid validates the SARIF log against the SARIF 2.1.0 JSON schema that
// go-sarif embeds (through gojsonschema), then checks the parts GitHub code scanning needs.
func TestSARIFValid(t *testing.T) {
	res, b := goldenResult(t)
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, res, b.Reasons()); err != nil {
		t.Fatal(err)
	}
	parsed, err := sarif.FromBytes(buf.Bytes())
	if err != nil {
		t.Fatalf("parse own SARIF: %v", err)
	}
	// The output leaves newlineSequences out (optional; the schema's default). go-sarif's
	// loader turns the missing array into an empty one, which the schema forbids
	// (minItems 1), and its struct cannot omit the field: put the default back.
	for _, run := range parsed.Runs {
		if len(run.NewlineSequences) == 0 {
			run.NewlineSequences = []string{"\r\n", "\n"}
		}
	}
	if strings.Contains(buf.String(), "[]") || strings.Contains(buf.String(), ": -1") || strings.Contains(buf.String(), "{}") {
		t.Errorf("SARIF output has empty padding (an empty array or object, or -1)")
	}
	if err := parsed.Validate(); err != nil {
		t.Fatalf("SARIF does not validate against the 2.1.0 schema: %v", err)
	}

	var doc struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID  string `json:"ruleId"`
				Level   string `json:"level"`
				Message struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				Suppressions []struct {
					Kind          string `json:"kind"`
					Justification string `json:"justification"`
				} `json:"suppressions"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "2.1.0" || !strings.Contains(doc.Schema, "sarif-schema-2.1.0") {
		t.Errorf("version %q, $schema %q; want 2.1.0 and the 2.1.0 schema", doc.Version, doc.Schema)
	}
	if len(doc.Runs) != 1 {
		t.Fatalf("have %d runs, want 1", len(doc.Runs))
	}
	run := doc.Runs[0]
	if run.Tool.Driver.Name != ToolName {
		t.Errorf("driver name %q, want %q", run.Tool.Driver.Name, ToolName)
	}
	if len(run.Tool.Driver.Rules) != len(Rules) {
		t.Errorf("have %d rules, want %d", len(run.Tool.Driver.Rules), len(Rules))
	}
	if want := len(res.New) + len(res.Accepted); len(run.Results) != want {
		t.Fatalf("have %d results, want %d", len(run.Results), want)
	}
	suppressed := 0
	for i, r := range run.Results {
		if _, ok := LookupRule(r.RuleID); !ok {
			t.Errorf("result %d: ruleId %q is not a rule", i, r.RuleID)
		}
		switch r.Level {
		case "error", "warning", "note":
		default:
			t.Errorf("result %d: level %q", i, r.Level)
		}
		if r.Message.Text == "" || len(r.Locations) != 1 {
			t.Errorf("result %d: empty message or %d locations", i, len(r.Locations))
			continue
		}
		pl := r.Locations[0].PhysicalLocation
		if pl.ArtifactLocation.URI == "" || strings.HasPrefix(pl.ArtifactLocation.URI, "/") || pl.Region.StartLine < 1 || pl.Region.StartColumn < 1 {
			t.Errorf("result %d: bad location %+v", i, pl)
		}
		if len(r.PartialFingerprints["mpspatchAudit/v1"]) != 16 {
			t.Errorf("result %d: partial fingerprint %v", i, r.PartialFingerprints)
		}
		if len(r.Suppressions) > 0 {
			suppressed++
			if r.Suppressions[0].Kind != "external" || r.Suppressions[0].Justification == "" {
				t.Errorf("result %d: suppression %+v, want kind external with the reason", i, r.Suppressions[0])
			}
		}
	}
	if suppressed != len(res.Accepted) {
		t.Errorf("have %d suppressed results, want %d", suppressed, len(res.Accepted))
	}
}

// TestDeclarationsAcrossFiles: a file-static is its own file's variable even when other
// files declare the same name (thread_local in one, a plain static in another), while a
// header's declaration and a definition elsewhere are one variable.
func TestDeclarationsAcrossFiles(t *testing.T) {
	use := func(name string) string {
		return "void touch() { " + name + ".push_back(1); }\n"
	}
	files := map[string][]byte{
		"a.mm": []byte("static thread_local std::vector<int> g_seen;\n" + use("g_seen")),
		"b.mm": []byte("static std::vector<int> g_seen;\n" + use("g_seen")),
		"c.mm": []byte("static thread_local std::vector<int> g_seen;\n" + use("g_seen")),
		// Shared: declared in the header, defined in d.mm, used in e.mm.
		"s.h":  []byte("extern std::vector<int> g_shared;\n"),
		"d.mm": []byte("std::vector<int> g_shared;\n"),
		"e.mm": []byte(use("g_shared")),
		// A member declared thread-safe nowhere, mutated in another file.
		"k.h":  []byte("class K { std::vector<int> items_; void add(); };\n"),
		"k.mm": []byte("void K::add() { items_.push_back(1); }\n"),
	}
	var have []string
	for _, f := range AuditSources(files) {
		have = append(have, f.File+" "+f.Rule)
	}
	want := []string{"b.mm MPS002", "e.mm MPS002", "k.mm MPS002"}
	if strings.Join(have, ", ") != strings.Join(want, ", ") {
		t.Errorf("findings: have %v, want %v", have, want)
	}
}

// TestSelfLockingPrimitive: endKernelCoalescing() and commit() called off the queue are
// fine when every audited definition takes the stream's lock first; commandEncoder()
// is not, since its caller goes on using the encoder after the lock is gone.
func TestSelfLockingPrimitive(t *testing.T) {
	caller := []byte(`void* Hooks::getCommandBuffer() {
  auto stream = getCurrentStream();
  stream->endKernelCoalescing();
  stream->commit();
  return stream->commandEncoder();
}
`)
	locked := []byte(`void Stream::endKernelCoalescing() {
  std::lock_guard<std::recursive_mutex> lock(_streamMutex);
  [_encoder endEncoding];
}
void Stream::commit() {
  dispatch_sync(_queue, ^() {
    [_buffer commit];
  });
}
id Stream::commandEncoder() {
  std::lock_guard<std::recursive_mutex> lock(_streamMutex);
  return _encoder;
}
`)
	unlocked := []byte(`void Stream::endKernelCoalescing() {
  if (_encoder) {
    std::lock_guard<std::recursive_mutex> lock(_streamMutex);
    [_encoder endEncoding];
  }
}
void Stream::commit() {
  [_buffer commit];
}
`)
	for _, tt := range []struct {
		name   string
		stream []byte
		want   string
	}{
		{"self-locking definitions", locked, "commandEncoder"},
		{"definitions that do not lock first", unlocked, "endKernelCoalescing commit commandEncoder"},
		{"no definition audited", nil, "endKernelCoalescing commit commandEncoder"},
	} {
		files := map[string][]byte{"Hooks.mm": caller}
		if tt.stream != nil {
			files["Stream.mm"] = tt.stream
		}
		var have []string
		for _, f := range AuditSources(files) {
			if f.Rule == "MPS004" && f.File == "Hooks.mm" {
				have = append(have, strings.SplitN(f.Message, "(", 2)[0])
			}
		}
		if strings.Join(have, " ") != tt.want {
			t.Errorf("%s: MPS004 on %v, want %s", tt.name, have, tt.want)
		}
	}
}
