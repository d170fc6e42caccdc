// Package patches embeds the thread-safety patch series: the `series` order file and the
// NNNN-slug.patch mails it lists. The files in this directory are the data; this one-file
// package only makes them part of the mpspatch binary so the tool works with no checkout.
package patches

import "embed"

// FS holds series and every *.patch file of this directory.
//
//go:embed series *.patch
var FS embed.FS
