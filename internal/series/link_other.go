//go:build !unix

package series

import "os"

// oldLinker hard-links old files into StateDir; elsewhere than Unix through os.Root.Link.
type oldLinker struct{ root *os.Root }

func newOldLinker(root *os.Root) (*oldLinker, error) { return &oldLinker{root: root}, nil }

func (l *oldLinker) link(p, name string) error { return l.root.Link(p, StateDir+"/"+name) }

func (l *oldLinker) close() {}
