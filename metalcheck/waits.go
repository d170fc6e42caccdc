package metalcheck

import (
	"fmt"
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
	"strings"
)

// Bits of function.waits.
const (
	waitAny     = 1 << iota // the function's own code blocks somewhere
	waitSingle              // ... outside any loop (MPS009: it waits for one thing)
	waitOnQueue             // ... where no dispatch_sync has run first (MPS010, below)
)

// waiter is a function whose own code blocks: a GPU wait, a condition-variable or
// semaphore wait, or a call that passes COMMIT_AND_WAIT (see blockingWait). Code in a
// block that runs later (a completion handler, a dispatch_async block) is not its own.
type waiter struct {
	class, bare string
	single      bool // a wait outside any loop
	// onQueue: a wait not preceded by a dispatch_sync in its own or an enclosing scope.
	// A wait after one runs once the block has returned, off the queue (commit on the
	// queue, wait after: the right shape); called from inside a block on that queue, the
	// function would stop at its dispatch_sync, not at the wait.
	onQueue bool
}

// deferredCall is a call whose finding depends on whether its callee blocks, which only
// the waiters of every audited file tell: a call inside a block dispatched onto a serial
// queue (MPS010) or on one stream in a device-wide synchronisation (MPS009).
// The calling function is the call site's caller.
type deferredCall struct {
	site       int32 // index into facts.calls
	line, col  int32
	stmt       [2]int32 // offsets of the statement's source in facts.stmts
	deviceWide bool     // MPS009; else MPS010
	queue      string   // MPS010: the queue the block is dispatched onto
}

// isWaitWord is a quick filter for blockingWait: the first bytes of the words it knows.
func isWaitWord(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	switch b[0] {
	case 'w', 'c', 'd', 's', 'p', 'C':
		return true
	}
	return false
}

// blockingWait returns, for code token i, the code index of a place where the thread
// blocks and what blocks there, or -1:
//   - the ObjC sends waitUntilCompleted, waitUntilScheduled, waitUntilSignaledValue:;
//   - calls of commitAndWait(), dispatch_semaphore_wait, dispatch_group_wait,
//     dispatch_block_wait, sem_wait, pthread_cond_wait, pthread_cond_timedwait;
//   - cv.wait(lock, ...), wait_for, wait_until, whose first argument is a lock guard
//     (std::unique_lock) of the function: a condition-variable wait;
//   - a call with COMMIT_AND_WAIT among its arguments (synchronize(COMMIT_AND_WAIT),
//     copy(..., COMMIT_AND_WAIT)): reported at the call's name.
func (m *extractor) blockingWait(i int32) (int32, string) {
	b := m.Bytes(i)
	switch string(b) {
	case "waitUntilCompleted", "waitUntilScheduled", "waitUntilSignaledValue":
		if (m.Is(i+1, "]") || m.Is(i+1, ":")) && (m.IsIdent(i-1) || m.Is(i-1, "]") || m.Is(i-1, ")")) {
			return i, string(b)
		}
	case "commitAndWait", "dispatch_semaphore_wait", "dispatch_group_wait", "dispatch_block_wait", "sem_wait",
		"pthread_cond_wait", "pthread_cond_timedwait":
		if m.Is(i+1, "(") && !(m.IsIdent(i-1) && !cxx.IsNotDeclPrev(m.Bytes(i-1))) {
			return i, string(b) + "()"
		}
	case "wait", "wait_for", "wait_until":
		if (m.Is(i-1, ".") || m.Is(i-1, "->")) && m.Is(i+1, "(") && m.IsIdent(i+2) && m.isGuard(i+2) {
			return i, "a condition-variable " + string(b) + "()"
		}
	case "COMMIT_AND_WAIT":
		if c := m.enclosingCall(i); c >= 0 {
			return c, m.Text(c) + "(COMMIT_AND_WAIT)"
		}
	}
	return -1, ""
}

// isGuard reports whether the name at k is the guard variable of a lock statement earlier
// in its scopes (std::unique_lock<std::mutex> lock(m); ... cv.wait(lock)).
func (m *extractor) isGuard(k int32) bool {
	name := m.Bytes(k)
	for s := m.ScopeOf(k); s >= 0; s = m.Scope(s).Parent() {
		sc := m.Scope(s)
		for ev := range sc.Locks() {
			if ev.Pos < k && ev.Guard != "" && ev.Guard == string(name) {
				return true
			}
		}
		if sc.Kind() == cxx.ScopeFunction {
			break
		}
	}
	return false
}

// enclosingCall returns the code index of the name of the innermost call whose
// parentheses hold code token i (within i's statement), or -1.
func (m *extractor) enclosingCall(i int32) int32 {
	for k := i - 1; k >= 0; k-- {
		switch m.Byte1(k) {
		case ')', ']':
			if o := m.Match(k); o >= 0 && o < k {
				k = o
			}
		case ';', '{', '}':
			return -1
		case '(':
			if m.Match(k) > i && m.IsIdent(k-1) && !isNotCallee(m.Bytes(k-1)) {
				return k - 1
			}
			if m.Match(k) > i {
				return -1 // if (...), a cast, a grouping
			}
		}
	}
	return -1
}

// queueBlock returns the queue that code token i runs on when it sits in a block or
// lambda dispatched onto a serial queue (through nested lambdas, which are taken to run
// where they are written, and plain scopes); an ObjC block that is not dispatched runs
// later, elsewhere (a completion handler), so the search stops there.
func (m *extractor) queueBlock(i int32) (queue string, kind cxx.DispatchKind) {
	for s := m.ScopeOf(i); s >= 0; s = m.Scope(s).Parent() {
		sc := m.Scope(s)
		if sc.Dispatch() != cxx.NotDispatched {
			return sc.Queue(), sc.Dispatch()
		}
		if sc.Kind() == cxx.ScopeBlock || sc.Kind() == cxx.ScopeFunction {
			return "", cxx.NotDispatched
		}
	}
	return "", cxx.NotDispatched
}

// ownCode reports whether code token i runs when its function runs: not inside an ObjC
// block other than one passed to dispatch_sync (a completion handler runs later), nor
// inside anything dispatched asynchronously.
func (m *extractor) ownCode(i int32) bool {
	for s := m.ScopeOf(i); s >= 0; s = m.Scope(s).Parent() {
		sc := m.Scope(s)
		if sc.Dispatch() == cxx.DispatchedAsync {
			return false
		}
		if sc.Kind() == cxx.ScopeBlock && sc.Region() == "" {
			return false
		}
		if sc.Kind() == cxx.ScopeFunction {
			return true
		}
	}
	return true
}

// inLoop reports whether code token i sits in the body of a for, while or do loop of its
// function.
func (m *extractor) inLoop(i int32) bool {
	for s := m.ScopeOf(i); s >= 0 && m.Scope(s).Kind() != cxx.ScopeFunction; s = m.Scope(s).Parent() {
		sc := m.Scope(s)
		if sc.Kind() == cxx.ScopeControl {
			if h := m.StripPrefix(m.scopeHead(s), sc.Open()); m.Is(h, "for") || m.Is(h, "while") || m.Is(h, "do") {
				return true
			}
		}
	}
	return false
}

// waitRules (MPS010, and the facts MPS009 and MPS010 need from other files): a place
// where the thread blocks marks its function as one that waits, and inside a block
// dispatched onto a serial queue it is a finding.
func (m *extractor) waitRules(i int32, f *function, fx *facts) {
	at, what := m.blockingWait(i)
	if at < 0 {
		return
	}
	if m.ownCode(at) {
		f.waits |= waitAny
		if !m.inLoop(at) {
			f.waits |= waitSingle
		}
		if !m.afterDispatch(at, f) {
			f.waits |= waitOnQueue
		}
	}
	if q, kind := m.queueBlock(at); kind != cxx.NotDispatched {
		fx.direct = append(fx.direct, m.finding(at, "MPS010",
			fmt.Sprintf("%s blocks inside a block dispatched onto %s: everything queued there waits with it", what, q)))
	}
}

// afterDispatch reports whether a dispatch_sync (or dispatch_sync_with_rethrow,
// dispatch_barrier_sync) call comes before code token at in function f, in at's scope or
// one enclosing it: every path to at has then run a block on a queue and come back.
func (m *extractor) afterDispatch(at int32, f *function) bool {
	for k := f.Open() + 1; k < at; k++ {
		if !m.IsIdent(k) || !m.Is(k+1, "(") {
			continue
		}
		if _, kind := cxx.DispatchQueueArg(m.Bytes(k)); kind != cxx.DispatchedSync {
			continue
		}
		for s := m.ScopeOf(at); s >= 0; s = m.Scope(s).Parent() {
			if s == m.ScopeOf(k) {
				return true
			}
			if m.Scope(s).Kind() == cxx.ScopeFunction {
				break
			}
		}
	}
	return false
}

// dispatchInQueueBlock (MPS010): dispatch_sync from inside a block dispatched
// asynchronously onto a queue blocks that queue's thread until the other queue runs it
// (onto the same queue it never does). From inside a dispatch_sync block it is MPS008's.
func (m *extractor) dispatchInQueueBlock(i int32, fx *facts) {
	if !m.Is(i+1, "(") || m.Match(i+1) <= i+1 {
		return
	}
	q, kind := m.queueBlock(i)
	if kind != cxx.DispatchedAsync {
		return
	}
	target := m.LastName(i+2, m.TopLevelComma(i+2, m.Match(i+1)))
	fx.direct = append(fx.direct, m.finding(i, "MPS010",
		fmt.Sprintf("%s onto %s blocks inside a block dispatched asynchronously onto %s", m.Text(i), target, q)))
}

// noWaitArgs reports whether the arguments of the call named at i name a sync type that
// does not wait (SyncType::COMMIT, SyncType::NONE, ...) and none that does: such a call
// of a function that can wait does not wait here.
func (m *extractor) noWaitArgs(i int32) bool {
	if !m.Is(i+1, "(") || m.Match(i+1) <= i+1 {
		return false
	}
	seen := false
	for k := i + 2; k < m.Match(i+1); k++ {
		if !m.IsIdent(k) {
			continue
		}
		if m.Is(k, "COMMIT_AND_WAIT") {
			return false
		}
		if m.Is(k+1, "::") && m.IsIdent(k+2) && strings.Contains(m.Text(k), "Sync") && !strings.Contains(m.Text(k+2), "WAIT") {
			seen = true
		}
	}
	return seen
}

// deferCall records the call at i (site in fx.calls) for judging once the waiters of
// every file are known.
func (m *extractor) deferCall(i int32, f *function, site int32, rule, queue string, fx *facts) {
	// The statement's source bytes, normalised into tokens only for a finding (most
	// deferred calls never become one): one copy here instead of a text per call.
	start, end := m.statementBounds(i)
	if end >= m.Len() {
		end = m.Len() - 1
	}
	off := int32(len(fx.stmts))
	fx.stmts = append(fx.stmts, m.Span(start, end)...)
	t := m.Tok(i)
	line, col := m.RunePos(t)
	fx.deferred = append(fx.deferred, deferredCall{site: site, line: int32(line), col: int32(col),
		stmt: [2]int32{off, int32(len(fx.stmts))}, deviceWide: rule == "MPS009", queue: queue})
}

// callInQueueBlock (MPS010): a call inside a block dispatched onto a serial queue waits
// there when its callee blocks (judged once every file's waiters are known), unless its
// arguments name a sync type that does not wait.
func (m *extractor) callInQueueBlock(i int32, f *function, site int32, fx *facts) {
	q, kind := m.queueBlock(i)
	if kind == cxx.NotDispatched || m.noWaitArgs(i) {
		return
	}
	if m.Match(i+1) > i+1 && m.HasToken(i+2, m.Match(i+1), "COMMIT_AND_WAIT") {
		return // a blocking call by its arguments: waitRules reports it
	}
	if at, _ := m.blockingWait(i); at == i {
		return // commitAndWait(), a semaphore wait, ...: waitRules reports it
	}
	m.deferCall(i, f, site, "MPS010", q, fx)
}

// deviceSyncCall (MPS009): in a device-wide synchronisation, outside a loop, a call on
// one stream (stream->m(), getCurrentMPSStream()->m()) that waits: its name says so
// (...sync..., ...wait...), or its definition in the audited files blocks outside a loop
// (judged later). synchronize itself is singleStreamSync's; a callee that is itself
// device-wide (synchronizeAll) waits for every stream.
func (m *extractor) deviceSyncCall(i int32, f *function, site int32, fx *facts) {
	if f.deviceWide == 0 {
		f.deviceWide = 2
		if deviceWideSync(f.Bare()) {
			f.deviceWide = 1
		}
	}
	if f.deviceWide != 1 || !(m.Is(i-1, "->") || m.Is(i-1, ".")) || m.Is(i-2, "this") || m.Is(i-2, "self") {
		return
	}
	name := m.Text(i)
	if name == "synchronize" || deviceWideSync(name) || m.inLoop(i) || m.noWaitArgs(i) {
		return
	}
	recv := m.receiverCall(i - 1)
	if recv == "" && m.IsIdent(i-2) {
		recv = m.Text(i - 2)
	}
	if !streamLike(recv) {
		return
	}
	l := strings.ToLower(name)
	if strings.Contains(l, "sync") || strings.Contains(l, "wait") {
		fx.direct = append(fx.direct, m.finding(i, "MPS009",
			fmt.Sprintf("device-wide synchronisation %s waits for one stream (%s()), not for every stream", f.Name(), name)))
		return
	}
	m.deferCall(i, f, site, "MPS009", "", fx)
}

// streamLike reports whether a receiver names one stream (stream, m_stream,
// getCurrentMPSStream()), not a pool or a list of them.
func streamLike(recv string) bool {
	l := strings.ToLower(recv)
	return strings.Contains(l, "stream") && !strings.Contains(l, "pool") && !strings.HasSuffix(l, "streams")
}

// statementBounds returns the first and last code index of the statement around i, as
// statementText takes it.
func (m *extractor) statementBounds(i int32) (int32, int32) {
	s := i
	for s > 0 && !(m.Is(s-1, ";") || m.Is(s-1, "{") || m.Is(s-1, "}")) && i-s < maxStatementTokens {
		s--
	}
	e := i
	for e < m.Len()-1 && !(m.Is(e, ";") || m.Is(e, "{") || m.Is(e, "}")) && e-i < maxStatementTokens {
		e++
	}
	return s, e
}

// normaliseStatement is statementText for a statement's source bytes: its code tokens
// (no comments, no directives) joined by single spaces.
func normaliseStatement(src []byte) string {
	toks := cxx.CodeTokens(src)
	var sb strings.Builder
	for k, t := range toks {
		if k > 0 {
			sb.WriteByte(' ')
		}
		sb.Write(src[t.Off:t.End])
	}
	return sb.String()
}

// waitersByName indexes the waiters of every file by bare name.
func waitersByName(all []facts) map[string][]waiter {
	w := map[string][]waiter{}
	for fi := range all {
		for _, x := range all[fi].waiters {
			w[x.bare] = append(w[x.bare], x)
		}
	}
	return w
}

// judgeDeferred turns the deferred calls whose callee blocks into findings.
func judgeDeferred(all []facts) []Finding {
	var out []Finding
	var byName map[string][]waiter
	for fi := range all {
		fx := &all[fi]
		for _, d := range fx.deferred {
			if byName == nil {
				byName = waitersByName(all)
			}
			cs := &fx.calls[d.site]
			bare := fx.names[cs.bare]
			class := ""
			if cs.class >= 0 {
				class = fx.names[cs.class]
			}
			blocks := false
			for _, w := range byName[bare] {
				if cs.has(callExternal) || class == "" || w.class == "" || w.class == class {
					blocks = blocks || d.deviceWide && w.single || !d.deviceWide && w.onQueue
				}
			}
			if !blocks {
				continue
			}
			r := rulesByKey()["MPS010"]
			if d.deviceWide {
				r = rulesByKey()["MPS009"]
			}
			from := fx.callers[cs.caller]
			f := Finding{Rule: r.ID, Name: r.Name, Severity: r.Severity, File: fx.path, Line: int(d.line),
				Col: int(d.col), Function: from.name, Fix: r.Fix, Statement: normaliseStatement(fx.stmts[d.stmt[0]:d.stmt[1]]),
				fnClass: from.class, fnBare: from.bare}
			if d.deviceWide {
				f.Message = fmt.Sprintf("device-wide synchronisation %s waits for one stream: %s() blocks on the stream it is called on", from.name, bare)
			} else {
				f.Message = fmt.Sprintf("%s() blocks (its definition waits for the GPU, a condition variable or a semaphore) and is called inside a block dispatched onto %s: everything queued there waits with it", bare, d.queue)
			}
			out = append(out, f)
		}
	}
	return out
}
