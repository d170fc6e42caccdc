package lazyregexp

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr the first time it is called (panicking, as
// regexp.MustCompile does, on a bad expression) and returns the same *Regexp after that.
// Safe for concurrent use.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
