// Package upstream answers "does the series still apply to release X?" without a
// checkout, and keeps the cache that makes the answer cheap.
//
// The cache is one bare, partial, shallow repository per upstream URL under the user
// cache directory (os.UserCacheDir()/mpspatch/upstream). For each REF it fetches the
// commit alone with --depth 1 --filter=blob:none (commit and trees, no file contents),
// lists the paths the series touches with git ls-tree, fetches only those blobs the cache
// does not hold yet (one request, by object ID, the way a partial clone fetches on
// demand) and reads them with one git cat-file --batch. A second tag therefore costs its
// trees and the touched blobs that changed, nothing more; a warm run costs one ls-remote.
//
// The per-patch check is the series engine's, in memory (series.ComputeFrom on the
// blobs), with the questions check --tree does not ask: is a conflicting patch already
// there (absorbed: its reverse applies), and would a three-way merge against the pinned
// base take it (git merge-file on the base, patched-base and REF versions of each file).
//
// The cache is a copy, never trusted: every object read from it is checked against its ID
// as it streams out of git cat-file --batch (into a buffer of its own size, so a large file
// costs its size once), and a cache that cannot be read as it should (an object that is
// damaged, missing after a fetch, or hashes to another ID) is discarded and fetched again,
// once, with a warning in the report.
//
// Concurrent runs share the cache safely: a run holds the cache's shared lock and its
// repository's exclusive lock; Clean takes the cache's lock exclusively. The package never
// prints; progress goes to a callback.
package upstream
