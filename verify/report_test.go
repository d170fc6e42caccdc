package verify

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func boolp(b bool) *bool { return &b }

// fixtureReport is a run with every kind of outcome, two targets, repeats and scaling rows.
func fixtureReport() *Report {
	r := &Report{Info: RunInfo{Profile: "full", Device: "mps", Threads: []int{2, 4, 8}, Repeat: 2,
		Timeout: "5m0s", Scaling: true, StartedAt: time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)}}
	r.Env(Env{Target: TargetPatched, Interpreter: "venv/bin/python", Executable: "/src/venv/bin/python3.11",
		Python: "3.11.7", GIL: boolp(true), Torch: "2.9.1a0+gitd38164a", TorchGit: "d38164a545b4a4e4e0cf73ce67173f70574890b6",
		TorchPath: "/src/pytorch/torch/__init__.py", Pytest: "8.3.2", Device: "mps", DeviceName: "Apple M4 Max",
		Devices: []string{"mps", "cpu"}, Platform: "macOS-15.1-arm64",
		Provenance: json.RawMessage(`{"series":"0001..0007","mpspatch":"v0.1.0","base":"d38164a5"}`)})
	r.Env(Env{Target: TargetBaseline, Interpreter: "stock/bin/python", Executable: "/src/stock/bin/python3.11",
		Python: "3.11.7", GIL: boolp(true), Torch: "2.9.1", TorchGit: "d38164a545b4a4e4e0cf73ce67173f70574890b6",
		TorchPath: "/src/stock/lib/python3.11/site-packages/torch/__init__.py", Pytest: "8.3.2", Device: "mps",
		Devices: []string{"mps", "cpu"}, Platform: "macOS-15.1-arm64", Provenance: json.RawMessage("null"),
		Warnings: []string{"example warning <b>escaped</b>"}})
	add := func(target, id string, rep int, o Outcome, d float64, msg, death string, sigs ...string) {
		file, _, _ := strings.Cut(id, "::")
		log := ""
		if o == Crash || o == Timeout {
			log = "logs/" + target + "-" + strings.TrimSuffix(file, ".py") + ".r1.a1.log"
		}
		r.Result(Result{Target: target, ID: id, File: file, Repeat: rep, Outcome: o, Duration: d,
			Message: msg, Death: death, Signatures: sigs, Log: log})
	}
	for rep := 1; rep <= 2; rep++ {
		add(TargetPatched, "test_raw_ops.py::test_parallel_raw_ops[t8]", rep, Pass, 0.5, "", "")
		add(TargetPatched, "test_linear.py::test_linear_variants[t4-linear]", rep, Pass, 1.25, "", "")
		add(TargetPatched, "test_startup.py::test_cold_start", rep, Skip, 0, "cold start needs a fresh process", "")
	}
	add(TargetPatched, "test_models.py::test_shared_model[t8-mlp]", 1, Pass, 2, "", "")
	add(TargetPatched, "test_models.py::test_shared_model[t8-mlp]", 2, Crash, 0.75,
		"process died: SIGABRT: -[MTLDebugCommandBuffer commit]: failed assertion `commit an already committed command buffer'",
		"SIGABRT", "double-commit")
	add(TargetPatched, "test_lifecycle.py::test_oversubscription[t32]", 1, Fail, 3, "AssertionError: thread 7 output differs from the reference by 0.5", "")
	add(TargetPatched, "test_lifecycle.py::test_oversubscription[t32]", 2, Timeout, 300, "no progress for 5m0s; process group killed", "")
	add(TargetPatched, "test_models.py", 1, Error, 1, "suite process failed outside any test (exit status 4): usage & <error>", "exit status 4")

	add(TargetBaseline, "test_raw_ops.py::test_parallel_raw_ops[t8]", 1, Crash, 0.1,
		"process died: SIGSEGV: Fatal Python error: Segmentation fault", "SIGSEGV")
	add(TargetBaseline, "test_raw_ops.py::test_parallel_raw_ops[t8]", 2, Crash, 0.1,
		"process died: SIGABRT: failed assertion `Scheduled handler provided after commit call'", "SIGABRT", "handler-after-commit")
	add(TargetBaseline, "test_linear.py::test_linear_variants[t4-linear]", 1, Error, 0.2, "RuntimeError: A and B index not found", "", "matmul-index-not-found")
	add(TargetBaseline, "test_linear.py::test_linear_variants[t4-linear]", 2, Pass, 0.2, "", "")

	for _, target := range []string{TargetPatched, TargetBaseline} {
		scale := 1.0
		if target == TargetBaseline {
			scale = 0.55
		}
		for _, n := range []int{1, 2, 4, 8} {
			eff := []float64{1, 0.95, 0.85, 0.6}[map[int]int{1: 0, 2: 1, 4: 2, 8: 3}[n]] * scale
			if n == 1 {
				eff = 1
			}
			label := "scaling"
			if n == 8 {
				label = "device-bound"
			}
			r.Scaling(ScalingRow{Target: target, Model: "mlp-small", Mode: "threads", Threads: n,
				FPS: 1000 * float64(n) * eff, Efficiency: eff, HostMS: 0.4, DeviceMS: 0.9, Ceiling: 2.25, Label: label, GIL: boolp(true)})
			r.Scaling(ScalingRow{Target: target, Model: "transformer", Mode: "threads", Threads: n,
				FPS: 300 * float64(n) * eff * 0.7, Efficiency: eff * 0.7, HostMS: 1.6, DeviceMS: 0.8, Ceiling: 0.5, Label: "host-bound", GIL: boolp(true)})
		}
		r.Scaling(ScalingRow{Target: target, Model: "mlp-small", Mode: "batched", Threads: 8, FPS: 9000 * scale, Label: "batched"})
	}
	r.Boundary(BoundaryRow{Target: TargetPatched, Op: "raw", Threads: 16, Max: 16})
	r.Boundary(BoundaryRow{Target: TargetBaseline, Op: "linear", Threads: 2, Max: 16, Message: "SIGSEGV at 3 threads"})
	r.Notice(TargetPatched, "test_models.py: SIGABRT in test_models.py::test_shared_model[t8-mlp]; continuing the file in a fresh process (3 tests deselected)")
	return r
}

func golden(t *testing.T, name string, have []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, have, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./verify -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s differs from the golden file; run go test ./verify -run %s -update and review the diff\nhave:\n%s",
			path, t.Name(), have)
	}
}

func TestWriteJSONLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := writeJSONL(&buf, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.jsonl", buf.Bytes())

	// Every line is one JSON object with a type; results carry their target and outcome.
	types := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		typ, _ := m["type"].(string)
		types[typ]++
		if typ == "result" && (m["target"] == nil || m["outcome"] == nil || m["id"] == nil) {
			t.Errorf("line %d: result without target/outcome/id: %s", i+1, line)
		}
	}
	want := map[string]int{"run": 1, "env": 2, "result": 15, "scaling": 18, "boundary": 2, "notice": 1, "summary": 1}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("%s lines: have %d, want %d", k, types[k], v)
		}
	}
}

func TestWriteJUnitGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := writeJUnit(&buf, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.junit.xml", buf.Bytes())

	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	// 15 results: 1 fail; errors are crash, timeout, error (patched 3) + 2 crashes + 1 error (baseline).
	if doc.Tests != 15 || doc.Failures != 1 || doc.Errors != 6 || doc.Skipped != 2 {
		t.Errorf("totals: have tests %d failures %d errors %d skipped %d", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	}
	if len(doc.Suites) != 7 || doc.Suites[0].Name != "patched/test_raw_ops.py" {
		t.Errorf("suites: %+v", doc.Suites)
	}
	if !strings.Contains(buf.String(), `type="crash SIGABRT [double-commit]"`) {
		t.Error("the crash's death and signature are not in its <error type>")
	}
}

var resourceRef = regexp.MustCompile(`(?i)(src|href|xlink:href|action)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|@import`)

func TestWriteHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := writeHTML(&buf, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.html", buf.Bytes())
	html := buf.String()
	for _, want := range []string{
		"<svg", "Throughput against threads", "Efficiency",
		"2.9.1a0&#43;gitd38164a", "/src/pytorch/torch/__init__.py", `&#34;series&#34;:&#34;0001..0007&#34;`,
		"double-commit</b>: two threads committed one shared MTLCommandBuffer",
		"crash 1/2", "timeout 0/2", "skip 2/2",
		"example warning &lt;b&gt;escaped&lt;/b&gt;", "usage &amp; &lt;error&gt;",
		VerdictRule,
		"device-bound</b> at 8 threads", "<td>linear</td><td class=\"num\">2 / 16</td>", "host-bound</b> at 8 threads",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	assertSelfContained(t, html)
	// The env block precedes everything else in the body.
	if e, s := strings.Index(html, "<h2>Environment</h2>"), strings.Index(html, "<h2>Scaling</h2>"); e < 0 || e > s {
		t.Error("the environment must come first")
	}
}

// assertSelfContained: no script and no resource fetched from anywhere, no URL at all.
func assertSelfContained(t *testing.T, html string) {
	t.Helper()
	if strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		i := strings.Index(html, "http")
		t.Errorf("report.html contains a URL: …%s…", html[max(0, i-60):min(len(html), i+60)])
	}
	if m := resourceRef.FindString(html); m != "" {
		t.Errorf("report.html references an outside resource: %q", m)
	}
	if strings.Contains(strings.ToLower(html), "<script") {
		t.Error("report.html contains a script")
	}
}

func TestWriteHTMLEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := writeHTML(&buf, &Report{Info: RunInfo{Profile: "quick", Repeat: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"No scaling data", "No environment recorded", "empty"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
}

// dirWriter keeps valid reports at every step: a run killed after any result leaves files
// that parse and hold what finished.
func TestDirWriterIncremental(t *testing.T) {
	dir := t.TempDir()
	w, err := newDirWriter(dir, RunInfo{Profile: "quick", Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	fx := fixtureReport()
	for _, e := range fx.Envs {
		w.Env(e)
	}
	for i, res := range fx.Results[:4] {
		w.Result(res)
		b, err := os.ReadFile(filepath.Join(dir, JUnitFile))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests int `xml:"tests,attr"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil || doc.Tests != i+1 {
			t.Fatalf("after result %d: junit tests %d, err %v", i+1, doc.Tests, err)
		}
		lines, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
		if n := strings.Count(string(lines), `"type":"result"`); n != i+1 {
			t.Fatalf("after result %d: results.jsonl has %d results", i+1, n)
		}
		html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
		if !strings.Contains(string(html), res.ID) {
			t.Fatalf("after result %d: report.html lacks %s", i+1, res.ID)
		}
	}
	if err := w.Close(true); err != nil {
		t.Fatal(err)
	}
	lines, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
	last := strings.TrimSpace(string(lines))
	last = last[strings.LastIndexByte(last, '\n')+1:]
	if !strings.Contains(last, `"type":"summary","status":"interrupted"`) {
		t.Errorf("last line should be the interrupted summary, have %s", last)
	}
	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if !strings.Contains(string(html), "b-interrupted") {
		t.Error("report.html does not say the run was interrupted")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// results.jsonl read back renders the same reports as the live run wrote.
func TestReadReportRoundTrip(t *testing.T) {
	fx := fixtureReport()
	var jl bytes.Buffer
	if err := writeJSONL(&jl, fx); err != nil {
		t.Fatal(err)
	}
	back, err := readReport(bytes.NewReader(jl.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name  string
		write func(io.Writer, *Report) error
	}{{"jsonl", writeJSONL}, {"junit", writeJUnit}, {"html", writeHTML}} {
		t.Run(w.name, func(t *testing.T) {
			var want, have bytes.Buffer
			w.write(&want, fx)
			w.write(&have, back)
			if !bytes.Equal(have.Bytes(), want.Bytes()) {
				t.Errorf("%s of the report read back differs from the original", w.name)
			}
		})
	}
	if _, err := readReport(strings.NewReader("{\"type\":\"run\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: have %v, want an error naming line 2", err)
	}
}

// FuzzReadReport: any input either fails with an error or yields a report every writer
// can render (absurd scaling numbers are left out of the charts, never a panic).
func FuzzReadReport(f *testing.F) {
	var jl bytes.Buffer
	writeJSONL(&jl, fixtureReport())
	f.Add(jl.Bytes())
	f.Add([]byte(`{"type":"result","outcome":"crash","id":"x","target":"patched"}` + "\n"))
	f.Add([]byte(`{"type":"scaling","mode":"batched","threads":-3,"fps":-1}` + "\n" + `{"type":"scaling","fps":0}`))
	f.Add([]byte(`{"type":"env","provenance":[1,2]}`))
	f.Add([]byte(`{"type":"scaling","threads":1,"fps":1e308,"efficiency":-1e300}` + "\n" + `{"type":"scaling","threads":2000000000,"fps":1e-300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := readReport(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, w := range []func(io.Writer, *Report) error{writeJSONL, writeJUnit, writeHTML} {
			if err := w(io.Discard, rep); err != nil {
				t.Fatalf("writer failed: %v", err)
			}
		}
	})
}
