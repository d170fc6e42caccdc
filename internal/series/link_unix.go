//go:build unix

package series

import (
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// oldLinker hard-links old files into StateDir with one linkat(2) each, from directory
// descriptors opened once per directory. os.Root.Link walks both paths a component at a
// time on every call: eleven system calls per file of the MPS series' four-deep paths
// instead of one. (os.Root has no linkat between two of its directories, hence x/sys.)
type oldLinker struct {
	root  *os.Root
	state *os.File
	dirs  map[string]*os.File
}

func newOldLinker(root *os.Root) (*oldLinker, error) {
	state, err := root.Open(StateDir)
	if err != nil {
		return nil, err
	}
	return &oldLinker{root: root, state: state, dirs: map[string]*os.File{}}, nil
}

// link makes StateDir/name a hard link to the tree's file p (not following a symbolic
// link there: linkat without AT_SYMLINK_FOLLOW).
func (l *oldLinker) link(p, name string) error {
	dir := path.Dir(p)
	d, ok := l.dirs[dir]
	if !ok {
		var err error
		if d, err = l.root.Open(dir); err != nil {
			return err
		}
		l.dirs[dir] = d
	}
	from, err := d.SyscallConn()
	if err != nil {
		return err
	}
	to, err := l.state.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	cerr := from.Control(func(ffd uintptr) {
		if err := to.Control(func(tfd uintptr) {
			lerr = unix.Linkat(int(ffd), path.Base(p), int(tfd), name, 0)
		}); err != nil && lerr == nil {
			lerr = err
		}
	})
	if cerr != nil {
		return cerr
	}
	if lerr != nil {
		return &os.LinkError{Op: "link", Old: p, New: StateDir + "/" + name, Err: lerr}
	}
	return nil
}

func (l *oldLinker) close() {
	l.state.Close()
	for _, d := range l.dirs {
		d.Close()
	}
}
