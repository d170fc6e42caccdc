// Package series is the patch-series model and the apply engine.
//
// A series is a directory with a `series` order file and NNNN-slug.patch mails (see
// docs/series-format.md). Load parses and lints it; Plan computes, entirely in memory,
// what applying or reversing the whole series does to a tree; Commit writes that plan
// through a journal so that a crash at any instant leaves the tree wholly before or wholly
// after the series; Inspect classifies a tree (applied, not applied, partial, edited).
//
// The engine is pure Go on github.com/bluekeyes/go-gitdiff. It reads and writes only the
// files the series touches, never walks the tree, and needs no .git. go-gitdiff applies a
// hunk only at its recorded line and its conflict errors name no file or hunk, so the hunk
// locator (exact position, then the nearest offset where every context and removed line
// matches; zero fuzz, as `git apply`), file creation/deletion/rename/mode handling and the
// conflict reports are this package's own.
package series
