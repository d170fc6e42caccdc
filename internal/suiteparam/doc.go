// Package suiteparam holds the closed sets that choose how the verify suites run: the
// device torch runs them on (mps, cuda, cpu) and the profile (quick, full). The config's
// [verify] table, the flags of verify and run, and shell completion all take their values
// from here and parse them with the one function per set, so a value added or renamed is
// added or renamed once and every place that names the set agrees.
//
// It is a helper below every domain package and imports nothing of the project, so that
// internal/config can type its fields with it and verify could take them without either
// importing the other.
package suiteparam
