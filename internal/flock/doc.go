// Package flock takes advisory locks (flock(2)) on open files and directories: the tree
// lock of the apply engine (internal/series) and the upstream cache's locks
// (internal/upstream). The kernel drops such a lock when its process dies, so a killed
// mpspatch never leaves a stale lock behind.
package flock
