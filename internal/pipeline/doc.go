// Package pipeline runs an ordered list of stages (clone, apply, audit, build, probe,
// verify for `mpspatch run`) and makes the run resumable.
//
// Each stage declares the inputs it depends on. Before a stage runs, its inputs are hashed
// together with the digest of the stage before it, so a change anywhere upstream changes
// every digest after it: a re-run skips the stages whose digest matches the stamp of
// their last successful run and redoes the first changed stage and everything after it.
//
// A stamp is written only after its stage succeeded, atomically (temp file + rename), so a
// stage interrupted by Ctrl-C or SIGKILL has no stamp and runs again next time, while the
// stamps of finished stages stay valid. Stamps live inside the tree, where anything can
// be planted, so each carries an HMAC keyed by the user's state key (internal/statekey), kept
// outside every tree: a stamp the key does not authenticate is ignored (the stage runs
// again), never trusted.
//
// The package knows nothing of the stages themselves: internal/cli composes them from the
// same code as the commands. It never prints; a Reporter receives progress.
package pipeline
