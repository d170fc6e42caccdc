// Package stack is the patch-author workflow: the series as a branch of git commits and
// back. ApplyCommits turns the series into one commit per patch (each carrying a
// `Series-Id: NNNN` trailer); Export turns commits back into normalised, deterministic
// mails with stable IDs; Import adopts plain `git format-patch` output or an mbox;
// Rebase moves the commits onto a new upstream commit, patch by patch — exact, offset,
// three-way, or a stop with saved state that Continue, Skip and Abort work from and that
// survives a crash at any point.
//
// It composes the pure series engine (internal/series: parse, locate hunks, journaled
// writes) with the git binary (internal/gitcli). It never prints: results are values,
// and the CLI renders them. Intent checking is passed in as a function, because the
// intent grammar lives in metalcheck, which this package may not import.
package stack
