package metalcheck

import (
	"fmt"
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
func (m *fileModel) fetchOffQueue(i int32, f *function, fx *facts) {
	if !isFetchName(m.tb(i)) {
		return
	}
	switch {
	case m.is(i+1, "("):
		if m.isIdent(i-1) && !isNotDeclPrev(m.tb(i-1)) {
			return // a declaration
		}
	case m.is(i+1, "]") || m.is(i+1, ":"):
		if !(m.isIdent(i-1) || m.is(i-1, "]") || m.is(i-1, ")")) {
			return // not an ObjC send
		}
	default:
		return
	}
	if _, kind := m.queueBlock(i); kind != notDispatched {
		return
	}
	start, _ := m.statementBounds(i)
	for k := start; k < i; k++ {
		if isFetchName(m.tb(k)) && (m.is(k+1, "(") || m.is(k+1, "]") || m.is(k+1, ":")) {
			return // [stream->commandBuffer() blitCommandEncoder]: one fetch, reported at its first name
		}
	}
	name := m.text(i)
	if m.is(start, "return") {
		fd := m.finding(i, "MPS013", fmt.Sprintf("%s returns what %s() hands out, fetched off the stream's queue: its caller uses it while other threads may end the encoder or commit the buffer", f.name, name))
		fd.callee = "return"
		fx.direct = append(fx.direct, fd)
		return
	}
	// The variable it is stored in: the name before the first '=' of the statement.
	v := int32(-1)
	for k := start; k < i; k++ {
		if m.is(k, "(") && m.match[k] > k {
			k = m.match[k]
			continue
		}
		if m.is(k, "=") {
			if m.isIdent(k - 1) {
				v = k - 1
			}
			break
		}
	}
	if v < 0 {
		return
	}
	variable := m.tb(v)
	for s := m.scopeOf[i] + 1; int(s) < len(m.scopes) && m.scopes[s].open < f.close; s++ {
		sc := &m.scopes[s]
		if sc.dispatch == notDispatched || sc.open <= i {
			continue
		}
		for k := sc.open + 1; k < sc.close; k++ {
			if m.isIdent(k) && string(m.tb(k)) == string(variable) && !m.is(k-1, ".") && !m.is(k-1, "->") {
				fx.direct = append(fx.direct, m.finding(i, "MPS013",
					fmt.Sprintf("%s is fetched (%s()) outside the block dispatched onto %s that uses it: another thread's commit or synchronize on the stream can end it in between", m.text(v), name, sc.queue)))
				return
			}
		}
	}
}
