package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/metalcheck/probe"
)

// probeUpdate reports whether golden files are to be rewritten (go test -update). Other
// tests of this package may define the same flag; it is registered only once.
func probeUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func TestProbeOffMacRunsNothing(t *testing.T) {
	if probe.Supported() == nil {
		t.Log("this OS has Metal; the refusal below is for every other OS")
		return
	}
	logDir := filepath.Join(t.TempDir(), "logs")
	code, stdout, stderr := runMain(t, "probe", "--log-dir", logDir)
	if code != ExitUnsupported {
		t.Errorf("have exit %d, want %d", code, ExitUnsupported)
	}
	if want := "mpspatch: the Metal probe needs macOS on Apple silicon; nothing was run\n"; stderr != want {
		t.Errorf("have stderr %q, want %q", stderr, want)
	}
	if stdout != "" {
		t.Errorf("have stdout %q, want none", stdout)
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("the log directory was created (%v); nothing should have been", err)
	}
	code, _, stderr = runMain(t, "probe", "child", "--scenario", "kind=info")
	if code != ExitUnsupported || !strings.Contains(stderr, "needs macOS") {
		t.Errorf("child: have exit %d, stderr %q; want %d and the refusal", code, stderr, ExitUnsupported)
	}
}

func TestProbeUsageErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"queues", []string{"probe", "--queues", "pooled"}, `--queues "pooled": want per-thread or shared`},
		{"zero threads", []string{"probe", "--threads", "4,0"}, "threads 0 out of range 1..256"},
		{"threads not numbers", []string{"probe", "--threads", "four"}, "invalid argument"},
		{"iterations", []string{"probe", "--iterations", "0"}, "iterations 0 out of range"},
		{"timeout", []string{"probe", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{"backend", []string{"probe", "--backend", "vulkan"}, `--backend "vulkan": want metal or fake`},
		{"argument", []string{"probe", "now"}, "unknown command"},
		{"child without scenario", []string{"probe", "child"}, "parse scenario: empty spec"},
		{"child bad scenario", []string{"probe", "child", "--scenario", "kind=warp"}, `unknown kind "warp"`},
		{"child backend", []string{"probe", "child", "--scenario", "kind=info", "--backend", "vulkan"}, `--backend "vulkan"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, tt.args...)
			if code != ExitUsage || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("have exit %d, stderr %q; want %d and %q", code, stderr, ExitUsage, tt.wantStderr)
			}
		})
	}
}

// TestProbeChildStreamsEvents runs the hidden child in process with the fake backend and
// reads its stdout the way the parent does.
func TestProbeChildStreamsEvents(t *testing.T) {
	code, stdout, stderr := runMain(t, "probe", "child", "--backend", "fake",
		"--scenario", "kind=stress,threads=3,iterations=4,queues=shared,words=32")
	if code != ExitOK {
		t.Fatalf("have exit %d, stderr %s", code, stderr)
	}
	l := &probe.EventLog{}
	l.Write([]byte(stdout))
	l.Close()
	prog := probe.ProgressOf(l.Events())
	if prog.Result == nil || !prog.Result.OK || prog.Iterations != 12 || prog.Finished != 3 {
		t.Errorf("have progress %+v, result %+v; want 12 iterations by 3 workers and an ok result", prog, prog.Result)
	}
	if noise, bad := l.Noise(); len(noise)+len(bad) != 0 || l.Torn() != "" {
		t.Errorf("stdout is not pure protocol: noise %q, malformed %q, torn %q", noise, bad, l.Torn())
	}
}

// TestProbeFakeEndToEnd builds mpspatch and runs the whole probe, children included, on
// the fake backend: the same parent, child command line, protocol and report as on a Mac,
// with the in-memory GPU in place of Metal.
func TestProbeFakeEndToEnd(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "mpspatch")
	if _, err := run.Output(context.Background(), run.Cmd{Argv: []string{"go", "build", "-o", bin, "github.com/mpspatch/mpspatch/cmd/mpspatch"}}); err != nil {
		t.Fatalf("build mpspatch: %v", err)
	}
	old := probeExecutable
	probeExecutable = func() (string, error) { return bin, nil }
	t.Cleanup(func() { probeExecutable = old })

	logDir := filepath.Join(t.TempDir(), "logs")
	code, stdout, stderr := runMain(t, "probe", "--backend", "fake", "--threads", "4,1", "--iterations", "6",
		"--queues", "shared", "--controls", "--json", "--log-dir", logDir)
	if code != ExitOK {
		t.Fatalf("have exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var rep probe.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	var have []string
	for _, o := range rep.Outcomes {
		have = append(have, o.Scenario.Slug()+"="+string(o.Class))
		if _, err := os.Stat(o.Log); err != nil {
			t.Errorf("%s: log: %v", o.Name, err)
		}
	}
	want := []string{
		"info=ok",
		"stress-t1-i6-shared-w4096=ok",
		"stress-t4-i6-shared-w4096=ok",
		"control-shared-command-buffer-t4-i1-shared-w4096=metal-assertion",
		"control-handler-after-commit-t1-i1-per-thread-w4096=metal-assertion",
	}
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Errorf("have outcomes\n  %s\nwant\n  %s", strings.Join(have, "\n  "), strings.Join(want, "\n  "))
	}
	if !rep.Pass || rep.Passed != 5 || rep.Device == nil || rep.Device.Backend != "fake" {
		t.Errorf("have pass %v (%d passed), device %+v", rep.Pass, rep.Passed, rep.Device)
	}
	if !strings.Contains(stderr, "probe [5/5] control: completed handler added after commit: pass (aborted by an assertion, as it must be)") {
		t.Errorf("progress on stderr lacks the last scenario:\n%s", stderr)
	}
}

// sampleProbeReport is a report as a Mac might produce it: every kind of row, with fixed
// times and paths so the rendering can be compared with golden files.
func sampleProbeReport() probe.Report {
	dev := &probe.DeviceInfo{Backend: "metal", Name: "Apple M2 Pro", OS: "Version 15.1 (Build 24B83)",
		Families: []string{"apple7", "apple8", "mac2", "metal3"}, RecommendedMaxWorkingSetSize: 22906503168, UnifiedMemory: true}
	s := func(threads int) probe.Scenario {
		return probe.Scenario{Kind: probe.KindStress, Threads: threads, Iterations: 50, Queues: probe.QueuesPerThread, Words: probe.DefaultWords}
	}
	rep := probe.Report{LogDir: "/tmp/mpspatch-probe-1"}
	rep.Add(probe.Outcome{Scenario: probe.Scenario{Kind: probe.KindInfo}, Name: "device info", Class: probe.ClassOK,
		Pass: true, ElapsedMS: 212, Device: dev, Log: "/tmp/mpspatch-probe-1/info.log"})
	rep.Add(probe.Outcome{Scenario: s(1), Name: s(1).Name(), Class: probe.ClassOK, Pass: true, ElapsedMS: 431})
	rep.Add(probe.Outcome{Scenario: s(8), Name: s(8).Name(), Class: probe.ClassAssertion, ElapsedMS: 1290, ExitCode: -1, Signal: "SIGABRT",
		Detail:     "-[MTLDebugCommandBuffer addCompletedHandler:]: failed assertion `Scheduled handler provided after commit call'",
		StderrTail: []string{"-[MTLDebugCommandBuffer addCompletedHandler:]: failed assertion `Scheduled handler provided after commit call'"},
		TornLine:   `{"v":1,"type":"it`,
		Log:        "/tmp/mpspatch-probe-1/stress-t8-i50-per-thread-w4096.log"})
	rep.Add(probe.Outcome{Scenario: s(16), Name: s(16).Name(), Class: probe.ClassChecksFailed, ElapsedMS: 2048, ExitCode: 1,
		Detail:   "worker 3: iteration 7: 1 words wrong, first at index 12: have 0x1, want 0x2 (written by worker 5 iteration 7)",
		Failures: []string{"worker 3: iteration 7: 1 words wrong, first at index 12: have 0x1, want 0x2 (written by worker 5 iteration 7)"},
		Log:      "/tmp/mpspatch-probe-1/stress-t16-i50-per-thread-w4096.log"})
	c := probe.Scenario{Kind: probe.KindHandlerAfterCommit, Threads: 1, Iterations: 1, Queues: probe.QueuesPerThread, Words: probe.DefaultWords}
	rep.Add(probe.Outcome{Scenario: c, Name: c.Name(), Class: probe.ClassChecksFailed, ElapsedMS: 95, ExitCode: 1,
		Detail:   "negative control \"control-handler-after-commit\" was not aborted by Metal",
		Failures: []string{"negative control \"control-handler-after-commit\" was not aborted by Metal"},
		Log:      "/tmp/mpspatch-probe-1/control-handler-after-commit-t1-i1-per-thread-w4096.log"})
	return rep
}

func TestProbeReportGolden(t *testing.T) {
	rep := sampleProbeReport()
	for _, tt := range []struct {
		name string
		json bool
	}{{"report.txt", false}, {"report.json", true}} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := &printer{out: &out, err: &bytes.Buffer{}, json: tt.json}
			if err := p.Result(rep, func(w io.Writer) { writeProbeReport(w, p, rep) }); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "probe", tt.name)
			if probeUpdate() {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (go test -run TestProbeReportGolden -update writes it): %v", err)
			}
			if out.String() != string(want) {
				t.Errorf("have\n%s\nwant\n%s", out.String(), want)
			}
		})
	}
}
