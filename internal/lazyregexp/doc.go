// Package lazyregexp compiles a package-level regular expression on first use instead of at
// start-up. Every mpspatch command links every package, so a regexp.MustCompile in a
// package's variables costs `mpspatch version` as much as the command that needs it.
package lazyregexp
