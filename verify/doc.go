// Package verify runs the Python concurrency suites against a PyTorch build and reports.
//
// The suites (verify/suites, embedded with go:embed and written out by WriteSuites) are
// pytest files that stream JSON-lines events to $MPSPATCH_EVENTS: env, start, end,
// scaling, boundary, summary (see Event; unknown events and fields are ignored, a torn last
// line is dropped). Probe first asks the interpreter which torch it loads, with its
// provenance stamp, so every report starts with what was actually tested.
//
// Run drives one interpreter (a target: patched, or the stock baseline) through the suite
// files, each in its own pytest process started by internal/run in its own process group.
// It follows the events file while the process runs. When the process dies inside a test
// (a start with no end) the test is a Crash, classified by signal and by the known Metal
// messages in its output (Signatures); when it goes silent past the per-test timeout the
// whole group is killed and the test is a Timeout. Either way the rest of the file goes on
// in a fresh process with the finished and crashed tests listed in $MPSPATCH_DESELECT, so a
// crash costs one test, never the file and never mpspatch.
//
// Results reach an Observer as they happen. Report aggregates them (the verdict rule: a
// test passes only if every repetition passes; nothing is rerun), and dirWriter keeps
// results.jsonl, junit.xml and a self-contained report.html with the scaling charts (gonum
// plot, inline SVG) up to date after every result. ReadReport reads results.jsonl back.
//
// The package never prints; internal/cli owns the terminal.
package verify
