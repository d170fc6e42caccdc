//go:build !unix

package gitcli

// openNoFollowFlags: no O_NOFOLLOW or O_NONBLOCK here; fstat still refuses a file that
// is not regular.
const openNoFollowFlags = 0
