// Package run is the one way mpspatch starts a process.
//
// Every external tool (git, python, cmake, ninja, the Metal probe's child) is started
// through Start or Run with an argv, never a shell string. The child gets its own process
// group so that a timeout or Ctrl-C kills it and everything it spawned; its output can be
// teed to a log file while the caller reads it line by line.
package run
