//go:build !unix

package confined

import "os"

// fileID is empty off unix: the path alone identifies a checkout there.
func fileID(os.FileInfo) string { return "" }

const nonBlocking = 0
