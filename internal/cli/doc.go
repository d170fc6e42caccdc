// Package cli is mpspatch's command tree.
//
// Main is the whole program: cmd/mpspatch only calls it. Each command lives in its own file
// with the same shape: an options struct, newXCmd(deps) building the cobra command, and
// runX(ctx, opts) doing the work by composing the domain packages (internal/series, builder,
// verify, metalcheck). Domain packages never print; this package owns stdout (results),
// stderr (progress), --json, colour, and the one mapping from errors to exit codes.
package cli
