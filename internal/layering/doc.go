// Package layering holds no code: its test is the project's layering rules, checked on the
// import graph that `go list -deps` reports for every package of the module (for the host
// and for darwin/arm64, where the Metal probe's build-tagged files are compiled).
//
// The rules are the ones docs/architecture.md states: internal/cli composes the domain
// packages, the domain packages never import cobra, internal/cli or each other sideways
// (stack and upstream compose the series engine, the one exception), helpers stay below
// the domains, the series engine starts no process and runs no git, and the test-support
// packages are never linked into the product. Each rule in layering_test.go says why it
// exists, and a failure names the package, the import that breaks the rule, the chain of
// imports that brought it in, and that reason.
//
// A new package must be given a layer in the test's table before the test passes, so that
// no package escapes the rules by being unknown to them.
package layering
