package verify

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A report of the patched torch alone, on a torch build that records no git commit
// (Debian's says "Unknown"): the legend named a baseline that never ran, and the
// environment said "git Unknown".
func TestHTMLLegendOnlyWhatRan(t *testing.T) {
	r := &Report{Info: RunInfo{Profile: "quick", Device: "cpu", Repeat: 1, Timeout: "5m0s", Scaling: true,
		StartedAt: time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)}}
	r.Env(Env{Target: TargetPatched, Torch: "1.13.0a0", TorchGit: "Unknown", Device: "cpu"})
	r.Result(Result{Target: TargetPatched, ID: "test_a.py::test_a", File: "test_a.py", Repeat: 1, Outcome: Pass})
	for _, n := range []int{1, 2, 4} {
		r.Scaling(ScalingRow{Target: TargetPatched, Model: "mlp", Mode: "threads", Threads: n, FPS: float64(100 * n),
			Efficiency: 1, HostMS: 1, DeviceMS: 2, Ceiling: 1.5, Label: "scales"})
	}
	var buf bytes.Buffer
	if err := writeHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	html := strings.ReplaceAll(buf.String(), "dominant-baseline", "") // SVG's own word
	for _, bad := range []string{"baseline", "batched", "git Unknown"} {
		if strings.Contains(html, bad) {
			i := strings.Index(html, bad)
			t.Errorf("the report says %q where none ran: ...%s...", bad, html[max(0, i-80):min(len(html), i+40)])
		}
	}
	for _, want := range []string{"1.13.0a0 (this build records no git commit)", "Solid: patched, threads. Throughput",
		"The <b>ceiling</b> column is (host + device) / device ms per forward"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
