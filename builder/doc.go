// Package builder drives the PyTorch build of a patched tree.
//
// Build runs the configured interpreter in the tree (by default
// `python -m pip install -e . -v --no-build-isolation`) with USE_MPS=1, MAX_JOBS and the
// configured environment, after preflight has checked that the tree looks like PyTorch,
// that the interpreter runs, has pip and is not an externally managed system python, and,
// on darwin, that `xcrun --show-sdk-path` finds a macOS SDK. Elsewhere preflight warns
// that MPS cannot be built and lets the build go on (useful to check the patched tree
// still compiles).
//
// With Options.Venv, ensureVenv first creates the virtual environment when missing and
// installs the tree's build requirements (requirements.txt, pyproject.toml's
// [build-system] requires) whenever they change; a requirement pip cannot install is a
// *RequirementError naming it.
//
// resolveLauncher finds ccache or sccache and sets it as CMake's compiler launcher
// (CMAKE_{C,CXX,OBJC,OBJCXX}_COMPILER_LAUNCHER), with its local directory and shared
// storage; a password comes from the environment variable the configuration names and is
// never recorded. The tool's own statistics, read before and after the build, give the
// hit rate (CacheStats).
//
// Before building, Build compares the build's Inputs (upstream commit, series and patch
// hashes, interpreter, arguments, build-relevant environment, launcher, platform) with
// those in the stamp: equal inputs mean no build (Result.UpToDate).
//
// The build's whole output goes to <log_dir>/build-<timestamp>.log. A tracker reads it
// line by line: ninja's "[done/total]" status becomes Events with a percentage and an ETA
// sent to a Reporter (the package never prints), and the first compiler error lines are
// kept so that a *BuildError can quote them next to the log path.
//
// After a successful build, writeProvenance records what was built, from what inputs and
// with what cache hit rate in <tree>/torch/mpspatch_provenance.json (written to a
// temporary file and renamed, so readers never see half a stamp); the verify suites read
// it. Then, and on every up-to-date run, checkTorch imports torch with the build's
// interpreter from outside the tree: a torch from elsewhere, or a stale one, is a
// *ShadowError naming the path and how to remove it.
package builder
