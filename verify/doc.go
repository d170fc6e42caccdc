// Package verify runs the Python concurrency suites against a PyTorch build and reports.
//
// Run is the whole session, for `mpspatch verify` and the verify stage of `mpspatch run`
// alike: a Plan in (interpreters, device, profile, suites, report directory), a Report
// out, and an Observer told of each step and result as it happens. It writes the embedded
// suites (verify/suites) to a temporary directory, probes each interpreter for the torch
// it loads (version, git hash, path, the provenance stamp of `mpspatch build`) so every
// report starts with what was actually tested, asks the caller's CheckTorch whether that
// torch is the build meant (verify does not import the builder), and only then creates the
// report directory; a session that fails before running leaves none behind.
//
// The suites are pytest files that stream JSON-lines events to $MPSPATCH_EVENTS: env,
// start, end, scaling, boundary, summary (see suiteEvent; unknown events and fields are
// ignored, a torn last line is dropped). runSuites drives one interpreter (a target:
// patched, or the stock baseline) through the suite files, each in its own pytest process
// started by internal/run in its own process group, following the events file while the
// process runs. When the process dies inside a test (a start with no end) the test is a
// Crash, classified by signal and by the known Metal messages in its output
// (crashSignatures); when it goes silent past the per-test timeout the whole group is
// killed and the test is a Timeout. Either way the rest of the file goes on in a fresh
// process with the finished and crashed tests listed in $MPSPATCH_DESELECT, so a crash
// costs one test, never the file and never mpspatch.
//
// Report aggregates the results (the verdict rule: a test passes only if every repetition
// passes; nothing is rerun), and dirWriter keeps results.jsonl, junit.xml and a
// self-contained report.html up to date after every result. The scaling charts in the
// HTML are inline SVG drawn by chart.go itself, with no plotting library. ReadReportFile
// reads results.jsonl back, so WriteReports can redraw an archived run.
//
// The package never prints; internal/cli owns the terminal.
package verify
