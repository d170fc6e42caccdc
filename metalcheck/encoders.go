package metalcheck

import (
	"fmt"
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
	"strings"
)

// isFetchName: the calls and ObjC sends that hand out a stream's command buffer or an
// encoder on it (commandBuffer(), commandEncoder(), [cb computeCommandEncoder],
// blitCommandEncoder, renderCommandEncoder and their ...With... forms).
func isFetchName(b []byte) bool {
	if len(b) < 13 {
		return false
	}
	switch b[0] {
	case 'c', 'g', 'b', 'r':
	default:
		return false
	}
	switch string(b) {
	case "commandBuffer", "commandEncoder", "getCommandBuffer":
		return true
	}
	s := string(b)
	return strings.HasPrefix(s, "computeCommandEncoder") || strings.HasPrefix(s, "blitCommandEncoder") ||
		strings.HasPrefix(s, "renderCommandEncoder")
}

// fetchOffQueue (MPS013): a command buffer or encoder fetched outside any block
// dispatched onto a queue, then used inside one later in the function (the block
// captures the variable it was stored in), or returned to the caller. Between the fetch
// and the use another thread's commit or synchronize on the stream can end the encoder
// or commit the buffer. A fetch inside the dispatched block is not reported; a returned
// one is excused when every caller of the function holds a lock or runs on a queue.
func (m *extractor) fetchOffQueue(i int32, f *function, fx *facts) {
	if !m.isFetch(i) {
		return
	}
	if _, kind := m.queueBlock(i); kind != cxx.NotDispatched {
		return
	}
	start, _ := m.statementBounds(i)
	for k := start; k < i; k++ {
		if isFetchName(m.Bytes(k)) && (m.Is(k+1, "(") || m.Is(k+1, "]") || m.Is(k+1, ":")) {
			return // [stream->commandBuffer() blitCommandEncoder]: one fetch, reported at its first name
		}
	}
	name := m.Text(i)
	if m.Is(start, "return") {
		fd := m.finding(i, "MPS013", fmt.Sprintf("%s returns what %s() hands out, fetched off the stream's queue: its caller uses it while other threads may end the encoder or commit the buffer", f.Name(), name))
		fd.callee = "return"
		fx.direct = append(fx.direct, fd)
		return
	}
	v := m.assignedName(start, i)
	if v < 0 {
		return
	}
	if queue, ok := m.usedInDispatchedBlock(i, f, m.Bytes(v)); ok {
		fx.direct = append(fx.direct, m.finding(i, "MPS013",
			fmt.Sprintf("%s is fetched (%s()) outside the block dispatched onto %s that uses it: another thread's commit or synchronize on the stream can end it in between", m.Text(v), name, queue)))
	}
}

// isFetch reports whether the fetch name at i is a call or an ObjC send, not a
// declaration.
func (m *extractor) isFetch(i int32) bool {
	if !isFetchName(m.Bytes(i)) {
		return false
	}
	switch {
	case m.Is(i+1, "("):
		return !m.IsIdent(i-1) || cxx.IsNotDeclPrev(m.Bytes(i-1)) // else a declaration
	case m.Is(i+1, "]") || m.Is(i+1, ":"):
		return m.IsIdent(i-1) || m.Is(i-1, "]") || m.Is(i-1, ")") // else not an ObjC send
	}
	return false
}

// assignedName returns the variable the statement starting at start stores the fetch at
// i in: the name before its first '=' (outside parentheses); -1 for none.
func (m *extractor) assignedName(start, i int32) int32 {
	for k := start; k < i; k++ {
		if m.Is(k, "(") && m.Match(k) > k {
			k = m.Match(k)
			continue
		}
		if m.Is(k, "=") {
			if m.IsIdent(k - 1) {
				return k - 1
			}
			return -1
		}
	}
	return -1
}

// usedInDispatchedBlock finds a block dispatched onto a queue after i, in function f, that
// uses variable (not as a member of something else): the queue it is dispatched onto.
func (m *extractor) usedInDispatchedBlock(i int32, f *function, variable []byte) (string, bool) {
	for s := m.ScopeOf(i) + 1; s < m.NumScopes() && m.Scope(s).Open() < f.Close(); s++ {
		sc := m.Scope(s)
		if sc.Dispatch() == cxx.NotDispatched || sc.Open() <= i {
			continue
		}
		for k := sc.Open() + 1; k < sc.Close(); k++ {
			if m.IsIdent(k) && string(m.Bytes(k)) == string(variable) && !m.Is(k-1, ".") && !m.Is(k-1, "->") {
				return sc.Queue(), true
			}
		}
	}
	return "", false
}
