// Package patches embeds the thread-safety patch series: the `series` order file and the
// NNNN-slug.patch mails it lists. The files in this directory are the data; this one-file
// package only makes them part of the mpspatch binary so the tool works with no checkout.
package patches

import "embed"

// FS holds series, every *.patch file of this directory, and the audit baseline.
//
//go:embed series *.patch audit-baseline.toml
var FS embed.FS

// AuditBaseline names, in FS, the findings that `mpspatch audit` accepts on a tree patched
// with this series (each with its reason). It travels with the series because it describes
// the patched code: a series change that removes or adds a finding changes it too.
const AuditBaseline = "audit-baseline.toml"
