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
	if !isFetchName(m.Bytes(i)) {
		return
	}
	switch {
	case m.Is(i+1, "("):
		if m.IsIdent(i-1) && !cxx.IsNotDeclPrev(m.Bytes(i-1)) {
			return // a declaration
		}
	case m.Is(i+1, "]") || m.Is(i+1, ":"):
		if !(m.IsIdent(i-1) || m.Is(i-1, "]") || m.Is(i-1, ")")) {
			return // not an ObjC send
		}
	default:
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
	// The variable it is stored in: the name before the first '=' of the statement.
	v := int32(-1)
	for k := start; k < i; k++ {
		if m.Is(k, "(") && m.Match(k) > k {
			k = m.Match(k)
			continue
		}
		if m.Is(k, "=") {
			if m.IsIdent(k - 1) {
				v = k - 1
			}
			break
		}
	}
	if v < 0 {
		return
	}
	variable := m.Bytes(v)
	for s := m.ScopeOf(i) + 1; s < m.NumScopes() && m.Scope(s).Open() < f.Close(); s++ {
		sc := m.Scope(s)
		if sc.Dispatch() == cxx.NotDispatched || sc.Open() <= i {
			continue
		}
		for k := sc.Open() + 1; k < sc.Close(); k++ {
			if m.IsIdent(k) && string(m.Bytes(k)) == string(variable) && !m.Is(k-1, ".") && !m.Is(k-1, "->") {
				fx.direct = append(fx.direct, m.finding(i, "MPS013",
					fmt.Sprintf("%s is fetched (%s()) outside the block dispatched onto %s that uses it: another thread's commit or synchronize on the stream can end it in between", m.Text(v), name, sc.Queue())))
				return
			}
		}
	}
}
