// Package gitcli runs typed git operations through the real git binary.
//
// Heavy work (clone by SHA, submodules, checkout, status, commit, apply, merge-file) goes
// through `git` started by internal/run: git is faster than a pure-Go implementation on a
// tree the size of PyTorch, honours .gitattributes, and can fetch a single commit by SHA.
// The one read-only query answered in-process is HeadCommit, through go-git, which the
// package's benchmark measures against `git rev-parse HEAD`.
//
// ObjectWriter is the one place git runs as a server rather than a command: three
// long-lived processes (hash-object for blobs and commits, mktree for trees) write a
// whole rebase's objects, so a rebase of hundreds of patches starts three processes, not
// three per patch.
//
// A Git value carries the binary, the environment and the log file every operation
// appends its full output to. Errors name the operation, git's exit status, the last lines
// git wrote to stderr and the log path. A missing git binary is a *NotFoundError so that
// callers can map it to "environment unsupported".
//
// DeterministicEnv builds the environment tests use: no system or global config, a
// private HOME, a fixed identity and fixed dates, so that the same commits produce the
// same SHAs on every machine.
package gitcli
