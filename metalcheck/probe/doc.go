// Package probe is the runtime Metal probe: it checks that the Metal stack under PyTorch's
// MPS backend takes concurrent command submission from many OS threads, and that the probe
// itself recognises the way Metal reports misuse.
//
// The work is split so that only the Metal calls are darwin-only:
//
//   - Backend is the little of Metal the probe uses (queues, buffers, a compute kernel
//     compiled from source, command buffers with completed handlers). metal_darwin.go
//     implements it with purego and its objc package, without cgo, so the package
//     cross-compiles from Linux; Fake implements it in memory for tests.
//   - RunChild is the body of a probe child process: N workers, each on its own locked
//     OS thread and released together by a barrier, submit kernels that write
//     expected(worker, iteration, index) into their own buffers, and check every word
//     afterwards (cross-talk names its writer). Negative controls break Metal's rules on
//     purpose and must be aborted by Metal. The child streams its progress as JSON lines
//     (Event) on stdout.
//   - Runner starts one child per Scenario through internal/run (own process group, time
//     limit, log file), reads its events tolerantly (a torn last line is evidence, not an
//     error), and classify turns exit status, events and stderr into a Class: ok,
//     checks-failed, timeout, metal-assertion, objc-exception, signal, panic or error.
//
// The package never prints; callers get Outcomes and a Report. docs/probe.md explains how
// to read them, and says plainly that the Metal half has not been run on a Mac.
package probe
