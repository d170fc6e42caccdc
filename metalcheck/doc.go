// Package metalcheck audits PyTorch's MPS sources for thread-safety hazards and checks the
// per-patch intents of the series; its probe subpackage runs the darwin-only Metal probe.
//
// # Static audit
//
// Audit reads the C++/Objective-C++ files under a tree's MPS directories (in parallel, a
// bounded number of workers) and reports Findings of thirteen rules, MPS001..MPS013 (see
// Rules and docs/audit.md). It works on tokens, not lines: Tokenize splits a source into
// comments, preprocessor lines, literals (raw strings and @"..." included), numbers,
// identifiers and punctuators, each with its line and column. A single pass over the code
// tokens then matches brackets and classifies every brace pair (namespace, class, function,
// lambda, ObjC block, control statement, initialiser, @synchronized), records variable
// declarations (globals, static and non-static members, function-local statics, atomics)
// and lock statements (std::lock_guard, unique_lock, scoped_lock, shared_lock,
// m.lock()/m.unlock(), noting a mutex reached through another object), marks region
// scopes that hold a lock throughout (@synchronized bodies, and blocks or lambdas passed to
// dispatch_sync/dispatch_sync_with_rethrow (a serial queue) or std::call_once), and marks
// blocks dispatched onto a serial queue, synchronously or not, with their queue. A lock
// counts at a token when it was taken earlier in the token's scope or an enclosing one
// within the same function.
//
// Some verdicts need facts from other files, so each file yields direct findings plus
// candidates and call facts, judged once every file is read: a member container declared
// in a header and mutated in a .mm file (declarations), a helper whose every caller holds
// a lock (call sites, with the locks held at each), a counter changed in several files
// under several locks (MPS011, grouped by variable), a call inside a dispatched block of a
// function whose own code waits (MPS010, MPS009: waiters, one call deep). Findings are
// sorted by file, line, column and rule, and carry a fingerprint (hash of rule, file,
// function and normalised statement text, plus a rank among equal ones) that survives line
// shifts. A Baseline of accepted findings, each with a mandatory reason, splits a report
// into new and accepted findings; WriteText, WriteJSON and WriteSARIF render the result.
//
// # Intents
//
// ParseIntent parses an `Intent:` trailer (docs/series-format.md, "Intent rules") and
// EvaluateIntents checks intents against file contents read through a callback, so the
// series engine can run them after apply and after each patch of a rebase.
//
// The package never prints and never exits; internal/cli composes it into `mpspatch audit`.
package metalcheck
