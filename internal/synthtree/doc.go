// Package synthtree writes PyTorch-shaped synthetic trees and patch series for benchmarks
// and tests: tens of thousands of C++-looking files in PyTorch's directory layout, a set of
// ~2,000-line MPS source files, and a series of N format-patch mails over them, with
// full-index blob IDs chained from the base as `git format-patch --full-index` writes them.
//
// Everything derives from a fixed seed, so two runs write byte-identical trees, and the
// series is written directly in Go (no git needed to make it), which keeps a 300-patch
// benchmark set-up to a fraction of a second. Its test checks every series with
// `git apply --check` and the result with `git apply`.
//
// It is imported only by tests and benchmarks.
package synthtree
