package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunShowsTheStagesProgress: while a stage runs, run shows on stderr the progress
// lines the stage's command prints on its own (stderr here is not a terminal: one line
// each); the stage's results stay in its log, which says the command line that redoes
// the stage, and the audit's log is text, its SARIF a report of its own.
func TestRunShowsTheStagesProgress(t *testing.T) {
	f := newRunFixture(t)
	t.Setenv("FAKE_MODE", "ok")
	hostOS = "linux"
	code, stdout, stderr := runMain(t, f.args("--until", "build")...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"clone: done: checked out ",          // clone's own progress
		"apply: series " + f.patches,         // apply's
		"auditing aten/src/ATen/mps in ",     // audit's
		"build: compile 100% [20/20]",        // the build's steps
		"warning: building on linux: MPS is", // a stage's warning, on a line of its own
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks the stage's progress %q:\n%s", want, stderr)
		}
	}
	// Results are the stages' own, in their logs: neither on stdout (run's summary) nor
	// on stderr.
	for _, result := range []string{"applied 1 patch, 1 file written", "  stamp: ", "new findings, "} {
		if strings.Contains(stderr, result) || strings.Contains(stdout, result) {
			t.Errorf("a stage's result %q left its log:\nstdout:\n%s\nstderr:\n%s", result, stdout, stderr)
		}
	}
	_, rep := runOutcomes(t, stdout)
	for _, s := range rep.Stages {
		data, err := os.ReadFile(s.Log)
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		first, _, _ := strings.Cut(log, "\n")
		wantFirst := "$ mpspatch --config " + f.config + " " + s.Name + " "
		if !strings.HasPrefix(first, wantFirst) || !strings.HasSuffix(log, "exit 0\n") {
			t.Errorf("%s's log does not start with the command line (%q) and end with its exit:\n%s", s.Name, wantFirst, log)
		}
		if strings.Contains(log, `"$schema"`) || strings.Contains(log, `"runs"`) {
			t.Errorf("%s's log holds SARIF or JSON:\n%s", s.Name, log)
		}
	}
	audit, err := os.ReadFile(rep.Stages[2].Log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), "1 file, 0 new findings, 0 accepted by the baseline\n") {
		t.Errorf("the audit's log lacks its text result:\n%s", audit)
	}
	sarif, err := os.ReadFile(filepath.Join(f.dir, ".mpspatch/run/report/audit.sarif"))
	if err != nil || !bytes.Contains(sarif, []byte(`"version": "2.1.0"`)) {
		t.Errorf("audit.sarif: %v\n%s", err, sarif)
	}
}

// TestStageViewOnATerminal: on a terminal the stage's lines replace each other on one
// redrawn line; a warning is printed on a line of its own, and the command's closing
// error line is left to the stage's summary line.
func TestStageViewOnATerminal(t *testing.T) {
	var errb bytes.Buffer
	p := newPrinter(IOStreams{Out: &bytes.Buffer{}, Err: &errb}, false, false)
	v := newStageView(p, true)
	v.Write([]byte("build: configure\nbuild: compile  5%"))
	v.Write([]byte(" [1/20]\nwarning: building on linux\nmpspatch: build failed\nbuild: done"))
	v.end()
	v.bar.clear()
	want := "\r\x1b[Kbuild: configure" + "\r\x1b[Kbuild: compile  5% [1/20]" + "\r\x1b[K" +
		"warning: building on linux\n" + "\r\x1b[Kbuild: done" + "\r\x1b[K"
	if have := errb.String(); have != want {
		t.Errorf("terminal:\nhave %q\nwant %q", have, want)
	}

	// Not a terminal: each line once, as it came.
	errb.Reset()
	v = newStageView(p, false)
	v.Write([]byte("clone: fetch: Receiving objects: 10%\nclone: fetch: Receiving objects: 10%\nclone: done\n"))
	if have, want := errb.String(), "clone: fetch: Receiving objects: 10%\nclone: done\n"; have != want {
		t.Errorf("not a terminal:\nhave %q\nwant %q", have, want)
	}

	// --quiet: nothing but warnings.
	errb.Reset()
	v = newStageView(newPrinter(IOStreams{Out: &bytes.Buffer{}, Err: &errb}, false, true), true)
	v.Write([]byte("build: configure\nwarning: w\n"))
	if have, want := errb.String(), "warning: w\n"; have != want {
		t.Errorf("quiet:\nhave %q\nwant %q", have, want)
	}
}
