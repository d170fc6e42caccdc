// Package series is the patch-series model and the apply engine.
//
// A series is a directory with a `series` order file and NNNN-slug.patch mails (see
// docs/series-format.md). Load parses and lints it; Plan computes, entirely in memory,
// what applying or reversing the whole series does to a tree, and refuses before writing
// anything that would make the write fail halfway; Commit writes that plan through an
// undo/redo journal so that a crash or a failed write at any instant leaves the tree wholly
// before or wholly after the series; Inspect classifies a tree (applied, not applied,
// partial, edited, interrupted) and writes nothing.
//
// Patches, the series directory and the tree — its journal included — are outside input:
// paths are checked as git's protectHFS/protectNTFS check them, the journal is
// authenticated with an HMAC keyed by a secret outside every tree, and a journal that does
// not verify is never replayed (see docs/apply.md, "Trust model").
//
// The engine is pure Go on github.com/bluekeyes/go-gitdiff. It reads and writes only the
// files the series touches, never walks the tree, and needs no .git. go-gitdiff applies a
// hunk only at its recorded line and its conflict errors name no file or hunk, so the hunk
// locator (exact position, then the nearest offset where every context and removed line
// matches; zero fuzz, as `git apply`), file creation/deletion/rename/mode handling and the
// conflict reports are this package's own.
package series
