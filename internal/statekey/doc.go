// Package statekey holds the per-user secret that authenticates the state mpspatch keeps
// inside trees: the apply engine's redo journal (internal/series) and the stage stamps of
// `mpspatch run` (internal/pipeline).
//
// Anything inside a tree is outside input: a checkout, or a patch, can carry a planted
// journal or stamp. mpspatch recognises its own by an HMAC keyed by a 32-byte secret that
// lives outside every tree, in the user's configuration directory (else the cache
// directory, else a private directory under the temporary directory), mode 0600 in a
// directory only the user can write. A journal or stamp whose MAC does not verify —
// planted, copied from another machine, or written while the key was elsewhere (a CI job
// with a fresh HOME) — is foreign: it is reported and never trusted.
package statekey
