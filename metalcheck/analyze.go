package metalcheck

import (
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
)

// extractor runs the rules over one file read by cxx: the reader's model, read-only, plus
// what the rules remember about the file while they extract its facts (per-function
// caches, the file's name table and lock sets). The rules are its methods; they ask the
// model and never change it.
type extractor struct {
	*cxx.File
	funcs      []function       // the model's functions with the rules' caches, by index
	locals     *cxx.Locals      // parameters and locals, answered beside the model
	names      cxx.Interner     // interned names (callees)
	nameTab    nameTable        // index of a name in facts.names
	lockSetIdx map[string]int16 // index of a lock set in facts.lockSets
	// lastLockSet caches lockSetAt's answer for a scope and the number of lock events
	// before the token in its scopes: the calls of one block share one set.
	lastLockSet struct {
		scope, events int32
		set           int16
		ok            bool
	}
	arena *arena // the worker's buffers
}

// function is one of the model's functions with what the rules cache about it.
type function struct {
	*cxx.Function
	callerIdx int32 // 1 + its index in facts.callers once it makes a call; 0 before
	classIdx  int32 // 1 + the index of class in facts.names once a call needs it; 0 before
	// waits records that the function's own code blocks (waitAny), outside any loop
	// (waitSingle): see blockingWait.
	waits uint8
	// resetPath and deviceWide cache resetPath(bare) (MPS012) and deviceWideSync(bare)
	// (MPS009): 0 not asked yet, 1 yes, 2 no.
	resetPath, deviceWide uint8
}

// analyze reads src and prepares the rules' pass over it.
func analyze(path string, src []byte) *extractor {
	return new(arena).analyze(path, src)
}

// arena holds the per-file buffers one worker reuses from file to file: the reader's,
// and the facts' (gathered here and copied out at their final size by extract, so that
// the slices regrown for each file are the worker's, not garbage per file).
type arena struct {
	reader   cxx.Reader
	locals   cxx.Locals
	funcs    []function
	src      []byte
	cands    []candidate
	calls    []callSite
	callers  []caller
	deferred []deferredCall
	stmts    []byte
}

func (a *arena) analyze(path string, src []byte) *extractor {
	file := a.reader.Read(path, src)
	n := file.NumFuncs()
	if cap(a.funcs) < int(n) {
		a.funcs = make([]function, n, n+n/4)
	}
	a.funcs = a.funcs[:n]
	for fi := range a.funcs {
		a.funcs[fi] = function{Function: file.Func(int32(fi))}
	}
	a.locals.Reset(file)
	return &extractor{File: file, funcs: a.funcs, locals: &a.locals, arena: a}
}

// intern returns b as a string shared by every occurrence in the file.
func (m *extractor) intern(b []byte) string { return m.names.Intern(b) }

// isLocal reports whether name is a parameter or non-static local of function fi.
func (m *extractor) isLocal(fi int32, name string) bool { return m.locals.IsLocal(fi, name) }
