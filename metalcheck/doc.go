// Package metalcheck audits PyTorch's MPS sources for thread-safety hazards and checks the
// per-patch intents of the series; its probe subpackage runs the darwin-only Metal probe.
//
// # Static audit
//
// Audit reads the C++/Objective-C++ files under a tree's MPS directories (in parallel, a
// bounded number of workers) and reports Findings of thirteen rules, MPS001..MPS013 (see
// Rules and docs/audit.md): lazy singletons (MPS001), unguarded shared containers
// (MPS002), unlocked lazy initialisation (MPS003), command-buffer state touched off the
// stream's queue (MPS004), default-stream synchronisation (MPS005), process-wide locks on
// an operator's path (MPS006), disabled code (MPS007), locks held across GPU waits
// (MPS008), device-wide synchronisation that waits for one stream (MPS009), waits inside a
// stream's queue block (MPS010), counters changed under locks that are not one lock
// (MPS011), pooled signal counters reset on reuse (MPS012) and encoders fetched outside
// the block that uses them (MPS013).
//
// Reading C++ is the job of metalcheck/internal/cxx, which knows nothing of rules: it
// tokenizes a file and, in one pass over the code tokens, builds a read-only model of its
// brace scopes (namespace, class, function, lambda, ObjC block, control statement,
// initialiser, @synchronized, with the lock a region holds and the serial queue a block is
// dispatched onto), functions, declarations and lock statements, with index accessors and
// the questions asked of it (which locks are held at a token, is a name a local). Each
// worker reuses one cxx.Reader's buffers from file to file. The rules are this package's:
// an extractor walks the model once per file (analyze.go, rules.go and, one concern each,
// locks.go, waits.go, encoders.go, counters.go) keeping its own per-function caches beside
// the model, and turns what it sees into direct findings plus candidates and call facts.
//
// Some verdicts need facts from other files, so they are judged once every file is read:
// a member container declared in a header and mutated in a .mm file (declarations), a
// helper whose every caller holds a lock (callers.go: call sites, with the locks held at
// each), a counter changed in several files under several locks (MPS011, grouped by
// variable), a call inside a dispatched block of a function whose own code waits (MPS010,
// MPS009: waiters, one call deep). Findings are sorted by file, line, column and rule, and
// carry a fingerprint (hash of rule, file, function and normalised statement text, plus a
// rank among equal ones) that survives line shifts. A Baseline of accepted findings, each
// with a mandatory reason, splits a report into new and accepted findings; WriteText,
// WriteJSON and WriteSARIF render the result.
//
// # Intents
//
// ParseIntent parses an `Intent:` trailer (docs/series-format.md, "Intent rules") and
// EvaluateIntents checks intents against file contents read through a callback (over the
// same cxx model), so the series engine can run them after apply and after each patch of
// a rebase.
//
// The package never prints and never exits; internal/cli composes it into `mpspatch audit`.
package metalcheck
