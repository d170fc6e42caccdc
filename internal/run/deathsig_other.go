//go:build !linux

package run

import "os/exec"

// setDieWithParent: only Linux can tie a child's life to its parent's; elsewhere the
// caller finds survivors itself (see Cmd.DieWithParent).
func setDieWithParent(*exec.Cmd) {}
