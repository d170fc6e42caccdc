// Package pipeline runs an ordered list of stages (clone, apply, audit, build, probe,
// verify for `mpspatch run`) and makes the run resumable.
//
// Each stage declares the inputs it depends on. Before a stage runs, its inputs are hashed
// together with the digest of the stage before it, so a change anywhere upstream changes
// every digest after it: a re-run skips the stages whose digest matches the stamp of
// their last successful run and redoes the first changed stage and everything after it.
// A stage that changes what it is judged by (apply changes the tree) declares that as its
// State: read before the stage, and again after it for the stamp, so the stage is up to
// date exactly while the state is the one it left (a tree unapplied since is not).
//
// A stamp is written only after its stage succeeded, atomically (temp file + rename), so a
// stage interrupted by Ctrl-C or SIGKILL has no stamp and runs again next time, while the
// stamps of finished stages stay valid. Stamps live inside the tree, where anything can
// be planted, so each carries an HMAC keyed by the user's state key (internal/statekey), kept
// outside every tree, over its content and the identity of the checkout it was made in: a
// stamp the key does not authenticate, or one made for another checkout, is ignored (the
// stage runs again), never trusted. Stamps and logs are written through confined
// directories (internal/confined): nothing planted in the tree can send them elsewhere.
//
// The package knows nothing of the stages themselves: internal/cli composes them from the
// same code as the commands. It never prints; a Reporter receives progress.
package pipeline
