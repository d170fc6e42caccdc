//go:build !unix

package series

// openNonblock is zero where there are no FIFOs to wait on.
const openNonblock = 0
