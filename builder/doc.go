// Package builder drives the PyTorch build of a patched tree.
//
// Build runs the configured interpreter in the tree (by default
// `python -m pip install -e . -v --no-build-isolation`) with USE_MPS=1, MAX_JOBS and the
// configured environment, after Preflight has checked that the tree looks like PyTorch,
// that the interpreter runs and has pip, and, on darwin, that `xcrun --show-sdk-path`
// finds a macOS SDK. Elsewhere Preflight warns that MPS cannot be built and lets the
// build go on (useful to check the patched tree still compiles).
//
// The build's whole output goes to <log_dir>/build-<timestamp>.log. A Tracker reads it
// line by line: ninja's "[done/total]" status becomes Events with a percentage and an ETA
// sent to a Reporter (the package never prints), and the first compiler error lines are
// kept so that a *BuildError can quote them next to the log path.
//
// After a successful build, WriteProvenance records what was built in
// <tree>/torch/mpspatch_provenance.json (written to a temporary file and renamed, so
// readers never see half a stamp); the verify suites read it.
package builder
