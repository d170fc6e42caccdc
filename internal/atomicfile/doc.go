// Package atomicfile replaces files so that no reader, and no crash, ever sees half of one.
//
// The content goes to a temporary file in the target's directory (same filesystem, so the
// rename is atomic), which is then renamed over the target. The tree's patched files do not
// go through here: the series engine has its own journal (internal/series) because it must
// replace many files as one unit.
package atomicfile
