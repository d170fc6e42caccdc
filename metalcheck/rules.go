package metalcheck

import (
	"fmt"
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
	"slices"
	"strings"
	"sync"
)

// Severity is how bad a finding is. Every finding not in the baseline fails the audit;
// severity only orders attention (and maps to SARIF levels).
type Severity string

// Severities, as SARIF levels.
const (
	SevError   Severity = "error"
	SevWarning Severity = "warning"
	SevNote    Severity = "note"
)

// Rule describes one audit check. IDs and names are fixed in docs/series-format.md.
type Rule struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Fix      string   `json:"fix"`
}

// Rules lists every rule, in ID order.
var Rules = []Rule{
	{ID: "MPS001", Name: "lazy-singleton", Severity: SevError,
		Summary: "A static or global pointer is created on first use by check-then-assign with no lock: two threads can both see it empty and both create it.",
		Fix:     "use a function-local static (initialised once, thread-safely, since C++11) or std::call_once; or make it thread_local if each thread may own one"},
	{ID: "MPS002", Name: "unguarded-container", Severity: SevError,
		Summary: "A process-wide or shared member container is mutated with no lock held in scope; concurrent inserts corrupt it.",
		Fix:     "hold a mutex that guards this container (std::lock_guard in the same scope) around every access, or make the container thread_local"},
	{ID: "MPS003", Name: "unlocked-lazy-init", Severity: SevError,
		Summary: "A member is lazily initialised by check-then-act with no lock (the commandBuffer()/commandEncoder() race): two threads can both create it.",
		Fix:     "take the object's lock (std::lock_guard on its mutex) before the check, or run the initialisation on the stream's serial queue"},
	{ID: "MPS004", Name: "off-queue-command-buffer", Severity: SevError,
		Summary: "Command-buffer or encoder state is touched from a function that holds no lock and is not inside a dispatch_sync block on the stream's serial queue.",
		Fix:     "move the call into dispatch_sync(_serialQueue, ^{ ... }) or hold the stream's mutex (std::lock_guard) in this function"},
	{ID: "MPS005", Name: "default-stream-sync", Severity: SevWarning,
		Summary: "getDefaultMPSStream() is used to synchronise a stream: with per-thread streams it waits on the wrong stream and races with the thread that owns it (device-wide synchronisation is MPS009).",
		Fix:     "synchronise the calling thread's stream: getCurrentMPSStream()"},
	{ID: "MPS006", Name: "global-hot-path-mutex", Severity: SevWarning,
		Summary: "A process-wide mutex (namespace-scope, static, or a member of a process-wide object) is locked on a hot path: an operator, an allocator malloc/free path, a kernel or pipeline getter, an encoder, a run*/exec*/encode* function. It is safe but serialises every thread (the goal is no global lock on an operator's path).",
		Fix:     "replace the global lock with per-stream or per-thread state (sharded or per-stream free lists, thread_local caches, a per-stream mutex), or publish immutable state that readers use without a lock once it is built"},
	{ID: "MPS007", Name: "disabled-code", Severity: SevNote,
		Summary: "Code is switched off by a constant condition (false &&, && false, if (0), if (false), #if 0); a fix that disables a path hides the problem instead of solving it.",
		Fix:     "delete the dead path, or guard it with a named, documented option and explain why it is off"},
	{ID: "MPS008", Name: "lock-held-across-gpu-wait", Severity: SevError,
		Summary: "A lock (lock_guard, unique_lock, scoped_lock, m.lock(), @synchronized) is held across a GPU wait (waitUntilCompleted, commitAndWait, synchronize(COMMIT_AND_WAIT)) or across a dispatch_sync onto a queue: completion handlers and the queue's work that take the same lock deadlock with it.",
		Fix:     "release the lock before waiting (copy what the wait needs, unlock, wait, relock), or wait outside the locked scope; keep one lock order and document it"},
	{ID: "MPS009", Name: "single-stream-device-sync", Severity: SevError,
		Summary: "A device-wide synchronisation (deviceSynchronize, synchronizeDevice, torch.mps.synchronize, emptyCache, elapsedTime) waits for one stream only, whatever the waiting method is called: with a stream per thread, work other threads queued is not waited for.",
		Fix:     "wait for every stream: commit each one on its own queue, collect the committed command buffers, and wait for them outside every queue and lock (a loop over the stream pool); leave per-stream waits to streams and events"},
	{ID: "MPS010", Name: "wait-in-queue-block", Severity: SevError,
		Summary: "A block dispatched onto a serial queue (a stream's) blocks: a GPU wait (waitUntilCompleted, synchronize(COMMIT_AND_WAIT)), a condition-variable or semaphore wait, a call whose definition waits, or a dispatch_sync from an asynchronous block. Everything queued there waits with it: threads sharing the stream cannot encode, and a device-wide synchronize that waits inside each stream's block puts the streams in lockstep.",
		Fix:     "commit inside the block, take the command buffer out, and wait after dispatch_sync returns, with no queue and no lock held"},
	{ID: "MPS011", Name: "split-lock-counter", Severity: SevError,
		Summary: "A process-wide counter or field that is not atomic is read-modify-written (x++, x += n) under locks that are not one lock: per-stream or sharded locks, or different mutexes in different functions, do not exclude each other, so increments are lost and ids repeat.",
		Fix:     "make it std::atomic (fetch_add), or change it under one process-wide lock everywhere"},
	{ID: "MPS012", Name: "pooled-counter-reset", Severity: SevError,
		Summary: "A reset, reuse or acquire path of a pooled object sets its signal or generation counter back to 0: a signal from the object's previous use can still arrive and satisfy a wait of the new one (ABA): waits skip, queries succeed early.",
		Fix:     "keep the counter monotonic for the life of the object (a new use waits for a value above every earlier one), or return the object to the pool only once its last signal has arrived"},
	{ID: "MPS013", Name: "encoder-fetched-off-queue", Severity: SevError,
		Summary: "A command buffer or encoder (commandBuffer(), commandEncoder(), [cb computeCommandEncoder]) is fetched outside the dispatch block that uses it, or returned to a caller off the queue: another thread's commit or synchronize on the stream can end the encoder or commit the buffer in between.",
		Fix:     "fetch it inside the dispatch_sync block on the stream's queue, where it is used"},
}

// rulesByKey is built on first use, not at every command's start.
var rulesByKey = sync.OnceValue(func() map[string]*Rule {
	m := map[string]*Rule{}
	for i := range Rules {
		m[Rules[i].ID] = &Rules[i]
		m[Rules[i].Name] = &Rules[i]
	}
	return m
})

// LookupRule finds a rule by ID (MPS002) or name (unguarded-container).
func LookupRule(key string) (Rule, bool) {
	r, ok := rulesByKey()[key]
	if !ok {
		return Rule{}, false
	}
	return *r, true
}

// Finding is one hazard at one place.
type Finding struct {
	Rule     string   `json:"rule"`
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
	// Col counts Unicode code points from 1.
	Col      int    `json:"col"`
	Function string `json:"function,omitempty"`
	Message  string `json:"message"`
	Fix      string `json:"fix"`
	// Statement is the normalised token text of the statement holding the finding; with
	// Rule, File and Function it makes the Fingerprint, which survives line shifts.
	Statement   string `json:"statement"`
	Fingerprint string `json:"fingerprint"`

	// fnClass and fnBare name the function holding the finding, to find its callers;
	// memberState says the finding is about an object's own state (a member container,
	// lazy member initialisation), which its constructor may touch unlocked.
	fnClass, fnBare string
	memberState     bool
	callee          string // MPS004: the primitive called
}

// String renders the finding as file:line:col: ID name: message.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s %s: %s", f.File, f.Line, f.Col, f.Rule, f.Name, f.Message)
}

// candidate is a possible finding whose verdict depends on declarations that may live in
// another file (a member container declared in a header, a global mutex defined elsewhere).
type candidate struct {
	kind        candKind
	name, qual  string
	class       string
	localStatic *cxx.Decl
	inCtor      bool
	where       string // candHotLock: why the function is on the hot path; candPoolReset: the target
	// fastPath (candHotLock): names tested by an earlier if that returns, in a scope
	// enclosing the lock. One that is thread_local makes the lock a per-thread
	// first-use path, not a per-call one.
	fastPath []string
	// locks (candCounter): the locks held at the mutation, an index into the file's
	// facts.lockSets (-1: none); root (candPoolReset): the member or local the reset field
	// is reached through ("" for the field itself), and viaLocal that it is a local or
	// parameter (another object).
	locks    int16
	viaLocal bool
	root     string
	finding  pendingFinding
}

// pendingFinding is what a candidate's finding needs from its file, without the parts
// that its rule gives (a Finding is 232 bytes; most candidates never become one).
type pendingFinding struct {
	rule                *Rule
	line, col           int32
	function, statement string
	fnClass, fnBare     string
}

// pending is finding for a candidate: the finding of rule at code token i, to be made
// (with its message) if the candidate is judged one.
func (m *extractor) pending(i int32, rule string) pendingFinding {
	f := m.finding(i, rule, "")
	return pendingFinding{rule: rulesByKey()[rule], line: int32(f.Line), col: int32(f.Col), function: f.Function,
		statement: f.Statement, fnClass: f.fnClass, fnBare: f.fnBare}
}

// make returns the finding in file.
func (p *pendingFinding) make(file string) Finding {
	r := p.rule
	return Finding{Rule: r.ID, Name: r.Name, Severity: r.Severity, File: file, Line: int(p.line), Col: int(p.col),
		Function: p.function, Fix: r.Fix, Statement: p.statement, fnClass: p.fnClass, fnBare: p.fnBare}
}

type candKind uint8

const (
	candContainer candKind = iota // a container mutation with no lock held
	candNullInit                  // if (!x) x = ... with an unlocked assignment
	candHotLock                   // a lock taken on an operator's execution path
	candCounter                   // a read-modify-write of a variable (MPS011, judged per variable)
	candPoolReset                 // a counter-like field set to 0 in a reset path (MPS012)
)

// facts is what one file contributes to an audit.
type facts struct {
	path       string
	decls      []cxx.Decl
	instances  []cxx.Instance
	bases      []cxx.ClassBase
	direct     []Finding
	cands      []candidate
	calls      []callSite
	callers    []caller
	names      []string // the names callSite indexes
	primitives []primitiveDef
	lockSets   [][]lockRef // the lock sets callSite.locks indexes
	// waiters are the functions whose own code blocks (MPS010, MPS009), and deferred
	// the calls whose finding depends on whether their callee is one; stmts holds the
	// statement texts of the deferred calls.
	waiters  []waiter
	deferred []deferredCall
	stmts    []byte
}

// primitiveDef is a definition of a command-buffer primitive and whether it locks itself.
type primitiveDef struct {
	bare       string
	selfLocked bool
}

// callSite is a call of a function by its bare name, from a function body: what the
// audit needs to tell that every caller of a function holds a lock (and which), or is a
// constructor. Names are indexes into facts.names (16 bytes a site: there is one every
// few lines).
type callSite struct {
	bare   int32
	class  int32 // C for C::f(), new C(...) and a bare f() in a method of C; -1 when unknown
	caller int32 // index of the calling function in facts.callers
	locks  int16 // index into facts.lockSets of the locks held at the call; -1 for none
	flags  callFlags
}

// callFlags describe a call site.
type callFlags uint8

const (
	callExternal callFlags = 1 << iota // obj->f(), obj.f(): any class
	callLocked                         // a lock (or a serial queue) is held at the call
	callInCtor                         // the caller is a constructor of class
)

func (c *callSite) has(f callFlags) bool { return c.flags&f != 0 }

// caller names a function that makes calls.
type caller struct{ class, bare, name string }

// extract runs the per-file part of every rule.
func (m *extractor) extract() (fx facts) {
	// The declarations live in the reader's buffers until here: Decls copies them at
	// their final size instead of a slice regrown for every file.
	fx = facts{path: m.Path(), decls: m.Decls(), instances: m.Instances(), bases: m.Bases()}
	a := m.arena
	fx.cands, fx.calls, fx.callers = a.cands[:0], a.calls[:0], a.callers[:0]
	fx.deferred, fx.stmts = a.deferred[:0], a.stmts[:0]
	defer func() {
		a.cands, a.calls, a.callers = fx.cands, fx.calls, fx.callers
		a.deferred, a.stmts = fx.deferred, fx.stmts
		fx.cands, fx.calls, fx.callers = ownCopy(fx.cands), ownCopy(fx.calls), ownCopy(fx.callers)
		fx.deferred, fx.stmts = ownCopy(fx.deferred), ownCopy(fx.stmts)
	}()
	m.disabledBranches(&fx)
	n := m.Len()
	for i := int32(0); i < n; i++ {
		// The rules look at identifiers, && and [ only.
		for ; i < n; i++ {
			if t := m.Tok(i); t.Kind == cxx.Ident || t.Kind == cxx.Punct && (t.First() == '&' || t.First() == '[') {
				break
			}
		}
		if i == n {
			break
		}
		m.tokenRules(i, &fx)
	}
	for fi := range m.funcs {
		f := &m.funcs[fi]
		m.primitiveDefinition(f, &fx)
		m.ctorCounters(f, &fx)
		if f.waits != 0 {
			fx.waiters = append(fx.waiters, waiter{class: f.Class(), bare: f.Bare(), single: f.waits&waitSingle != 0,
				onQueue: f.waits&waitOnQueue != 0})
		}
	}
	hot := strings.Contains(m.Path(), "native/mps/operations/")
	for si := range m.NumScopes() {
		m.hotPathLocks(si, hot, &fx)
	}
	return fx
}

// disabledBranches: MPS007 for each #if 0.
func (m *extractor) disabledBranches(fx *facts) {
	for k := range m.NumDirectives() {
		d := m.Directive(k)
		if word, rest := cxx.DirectiveWord(m.TokenBytes(d)); word == "if" && cxx.IsZeroCond(rest) {
			fx.direct = append(fx.direct, m.findingAt(d, -1, "MPS007", "#if 0 disables the code up to its #else/#endif", "#if 0"))
		}
	}
}

// tokenRules runs the rules that look at code token i, an identifier, && or [.
func (m *extractor) tokenRules(i int32, fx *facts) {
	t := m.Tok(i)
	b := m.Bytes(i)
	m.deadCondition(i, b, fx)
	// (A function's own '{', which belongs to its scope, never gets here: only
	// identifiers, && and [ do.)
	fi := m.Scope(m.ScopeOf(i)).Fn()
	if fi < 0 {
		return
	}
	f := &m.funcs[fi]
	if t.Kind == cxx.Ident && m.Is(i+1, "(") {
		m.callSite(i, fi, fx)
	}
	if t.Kind == cxx.Punct {
		if string(b) == "[" {
			m.objcMutation(i, fi, fx)
		}
		return
	}
	// The rules of issue 18 (MPS010 to MPS013) look at every identifier too.
	if isWaitWord(b) {
		m.waitRules(i, f, fx)
	}
	if isFetchName(b) {
		m.fetchOffQueue(i, f, fx)
	}
	if m.maybeCounter(i) {
		m.counterMutation(i, f, fx)
	}
	if f.resetPath == 0 {
		f.resetPath = 2
		if resetPath(f.Bare()) && !f.Ctor() {
			f.resetPath = 1
		}
	}
	if f.resetPath == 1 {
		m.poolReset(i, f, fx)
	}
	m.wordRules(i, b, fi, f, fx)
}

// deadCondition: MPS007 (anywhere) for `false &&`, `&& false` and if (0) at i.
func (m *extractor) deadCondition(i int32, b []byte, fx *facts) {
	switch string(b) {
	case "false":
		if m.Is(i+1, "&&") {
			fx.direct = append(fx.direct, m.finding(i, "MPS007", "`false &&` makes the rest of the condition dead"))
		}
	case "&&":
		if m.Is(i+1, "false") {
			fx.direct = append(fx.direct, m.finding(i+1, "MPS007", "`&& false` makes the whole condition false"))
		}
	case "if":
		if m.Is(i+1, "(") && (m.Is(i+2, "0") || m.Is(i+2, "false")) && m.Is(i+3, ")") {
			fx.direct = append(fx.direct, m.finding(i, "MPS007", fmt.Sprintf("`if (%s)` never runs its body", m.Text(i+2))))
		}
	}
}

// wordRules runs the rules keyed by the identifier b at i, in function fi (f).
func (m *extractor) wordRules(i int32, b []byte, fi int32, f *function, fx *facts) {
	switch string(b) {
	case "if":
		m.nullInit(i, fi, fx)
	case "getDefaultMPSStream":
		m.defaultStreamSync(i, f, fx)
	case "synchronize", "commit", "commandEncoder", "endKernelCoalescing":
		m.offQueue(i, f, fx)
		if string(b) == "synchronize" {
			m.singleStreamSync(i, f, fx)
			m.gpuWait(i, fx)
		}
	case "waitUntilCompleted", "commitAndWait", "waitUntilSignaledValue":
		m.gpuWait(i, fx)
	case "dispatch_sync", "dispatch_sync_with_rethrow", "dispatch_barrier_sync":
		m.nestedDispatch(i, fx)
		m.dispatchInQueueBlock(i, fx)
	default:
		m.containerMutation(i, fi, fx)
	}
}

// defaultStreamSync: MPS005 for getDefaultMPSStream() at i in a synchronisation function,
// or getDefaultMPSStream()->synchronize() anywhere but in device-wide synchronisation
// (MPS009's).
func (m *extractor) defaultStreamSync(i int32, f *function, fx *facts) {
	if !m.Is(i+1, "(") || deviceWideSync(f.Bare()) {
		return
	}
	fn := strings.ToLower(f.Bare())
	switch {
	case strings.Contains(fn, "sync"):
		fx.direct = append(fx.direct, m.finding(i, "MPS005",
			fmt.Sprintf("getDefaultMPSStream() in synchronisation function %s: it synchronises the default stream, not the calling thread's", f.Name())))
	case m.Is(i+2, ")") && m.Is(i+3, "->") && m.Is(i+4, "synchronize"):
		fx.direct = append(fx.direct, m.finding(i, "MPS005",
			"getDefaultMPSStream()->synchronize() waits on the default stream, not the calling thread's"))
	}
}

// hotPathLocks: MPS006 candidates for the locks taken in scope si when its function is on
// an operator's execution path (hot: the file is an operator's).
func (m *extractor) hotPathLocks(si int32, hot bool, fx *facts) {
	sc := m.Scope(si)
	if sc.Fn() < 0 {
		return
	}
	f := &m.funcs[sc.Fn()]
	if sc.NumLocks() == 0 || !hot && !hotPathFunction(f.Bare()) && !allocatorPath(f) && !operatorEntry(f) {
		return
	}
	for ev := range sc.Locks() {
		if ev.Release {
			continue
		}
		fd := m.pending(ev.At, "MPS006")
		where := f.Name()
		switch {
		case hot:
			where = "an operator in native/mps/operations/"
		case operatorEntry(f) && !hotPathFunction(f.Bare()) && !allocatorPath(f):
			where = "operator entry " + f.Name()
		}
		c := candidate{kind: candHotLock, name: ev.Name, qual: ev.Qual, class: f.Class(), where: where, finding: fd}
		c.fastPath = m.fastPathNames(si, ev.At, f)
		if perThreadCache(c.fastPath, f) {
			continue
		}
		if d, ok := f.Static(ev.Name); ok && ev.Qual == "" {
			c.localStatic = ownDecl(d)
		} else if ev.Qual == "" && m.isLocal(sc.Fn(), ev.Name) {
			continue
		}
		fx.cands = append(fx.cands, c)
	}
}

// ownDecl returns a copy of d to keep in a candidate. (Taking the address of the
// variable Function.Static answers into would move that variable to the heap on every
// question, found or not: most are not.)
func ownDecl(d cxx.Decl) *cxx.Decl { return &d }

// ownCopy returns s copied at its length (nil when empty), so that the copy does not keep
// the arena's buffer.
func ownCopy[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// hotPathFunction reports whether a function of this (bare) name runs on every operator:
// run*/exec*/encode* functions and encoders, allocator malloc/free paths, and kernel,
// pipeline and library getters.
// isNotCallee reports words followed by '(' that are not calls of an audited function.
func isNotCallee(b []byte) bool {
	switch string(b) {
	case "if", "for", "while", "switch", "return", "sizeof", "decltype", "catch", "static_cast",
		"reinterpret_cast", "const_cast", "dynamic_cast", "alignof", "noexcept", "TORCH_CHECK",
		"TORCH_INTERNAL_ASSERT", "lock", "unlock":
		return true
	}
	return false
}

// callSite records the call whose name is code token i, in function fi.
func (m *extractor) callSite(i, fi int32, fx *facts) {
	b := m.Bytes(i)
	if isNotCallee(b) || m.IsIdent(i-1) && !cxx.IsNotDeclPrev(m.Bytes(i-1)) || m.Is(i-1, "~") {
		return // a keyword, or a declaration (Type name(args))
	}
	f := &m.funcs[fi]
	if f.callerIdx == 0 {
		fx.callers = append(fx.callers, caller{f.Class(), f.Bare(), f.Name()})
		f.callerIdx = int32(len(fx.callers))
	}
	c := callSite{bare: m.nameIndex(b, fx), class: -1, caller: f.callerIdx - 1, locks: -1}
	inCtor := f.Ctor()
	own := func() int32 {
		if f.Class() == "" {
			return -1
		}
		if f.classIdx == 0 {
			f.classIdx = m.nameIndexString(f.Class(), fx) + 1
		}
		return f.classIdx - 1
	}
	switch {
	case m.Is(i-1, "->") || m.Is(i-1, "."):
		if m.Is(i-2, "this") || m.Is(i-2, "self") {
			c.class = own()
		} else {
			c.flags |= callExternal
		}
	case m.Is(i-1, "::"):
		if m.IsIdent(i - 2) {
			c.class = m.nameIndex(m.Bytes(i-2), fx)
		}
	case m.Is(i-1, "new"):
		c.class = c.bare // new C(...) calls C's constructor
	default:
		c.class = own()
	}
	if inCtor && c.class >= 0 && fx.names[c.class] == f.Class() {
		c.flags |= callInCtor
	}
	if m.Locked(i) {
		c.flags |= callLocked
		c.locks = m.lockSetAt(i, f, fx)
	}
	fx.calls = append(fx.calls, c)
	m.callInQueueBlock(i, f, int32(len(fx.calls)-1), fx)
	m.deviceSyncCall(i, f, int32(len(fx.calls)-1), fx)
}

// nameIndexString is nameIndex for a name held as a string.
func (m *extractor) nameIndexString(s string, fx *facts) int32 {
	return m.nameIndex([]byte(s), fx)
}

// nameIndex returns the index of name b in fx.names, adding it once per file. There is a
// call site every few lines and a few dozen names per file: the lookup is a small
// open-addressing table of the file's names, cheaper than hashing into a map.
func (m *extractor) nameIndex(b []byte, fx *facts) int32 {
	t := &m.nameTab
	if len(t.slots) == 0 {
		t.slots = make([]int32, 64)
	}
	h := nameHash(b)
	mask := uint32(len(t.slots) - 1)
	for k := h & mask; ; k = (k + 1) & mask {
		v := t.slots[k]
		if v == 0 {
			break
		}
		if fx.names[v-1] == string(b) {
			return v - 1
		}
	}
	k := int32(len(fx.names))
	fx.names = append(fx.names, m.intern(b))
	if 2*len(fx.names) > len(t.slots) {
		t.slots = make([]int32, 2*len(t.slots))
		mask = uint32(len(t.slots) - 1)
		for i, n := range fx.names {
			t.put(nameHash([]byte(n)), mask, int32(i)+1)
		}
		return k
	}
	t.put(h, mask, k+1)
	return k
}

// nameTable maps the names of one file to 1 + their index in facts.names (0: free slot).
type nameTable struct{ slots []int32 }

func (t *nameTable) put(h, mask uint32, v int32) {
	k := h & mask
	for t.slots[k] != 0 {
		k = (k + 1) & mask
	}
	t.slots[k] = v
}

// nameHash mixes a name's length and its first, middle and last bytes: a table holds a
// few dozen names, and a collision costs only a comparison.
func nameHash(b []byte) uint32 {
	n := len(b)
	if n == 0 {
		return 0
	}
	h := uint32(n)*0x9E3779B1 ^ uint32(b[0])<<16 ^ uint32(b[n/2])<<8 ^ uint32(b[n-1])
	h ^= h >> 15
	h *= 0x85EBCA6B
	return h ^ h>>13
}

// fastPathNames returns the variables named in the conditions of the if statements that
// come before code token at in function f, sit in scope sc or a scope enclosing it (so
// they run before the lock on every call), and return from their body: a cache lookup
// that returns early.
func (m *extractor) fastPathNames(sc, at int32, f *function) []string {
	var names []string
	for i := f.Open() + 1; i < at; i++ {
		if !m.Is(i, "if") || !m.Is(i+1, "(") || m.Match(i+1) <= i+1 {
			continue
		}
		enclosing := false
		for s := sc; s >= 0; s = m.Scope(s).Parent() {
			if s == m.ScopeOf(i) {
				enclosing = true
				break
			}
			if m.Scope(s).Kind() == cxx.ScopeFunction {
				break
			}
		}
		cl := m.Match(i + 1)
		if !enclosing || !m.Is(cl+1, "{") || m.Match(cl+1) <= cl+1 || m.Match(cl+1) > at {
			continue
		}
		if !m.HasToken(cl+2, m.Match(cl+1), "return") {
			continue
		}
		for k := i + 2; k < cl; k++ {
			if m.IsIdent(k) && !m.Is(k+1, "(") && !m.Is(k-1, ".") && !m.Is(k-1, "->") {
				names = append(names, m.Text(k))
			}
		}
	}
	return names
}

// perThreadCache: one of names is a function-local thread_local static of f.
func perThreadCache(names []string, f *function) bool {
	for _, n := range names {
		if d, ok := f.Static(n); ok && d.ThreadLocal {
			return true
		}
	}
	return false
}

func hotPathFunction(name string) bool {
	l := strings.ToLower(name)
	for _, p := range [...]string{"run", "exec", "encode"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	for _, w := range [...]string{"runmpsgraph", "executempsgraph", "encod", "malloc", "alloc", "free",
		"recordevents", "recordstream"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	if strings.HasPrefix(l, "get") {
		for _, w := range [...]string{"kernel", "pipeline", "library", "pso", "cplstate"} {
			if strings.Contains(l, w) {
				return true
			}
		}
	}
	return false
}

// operatorEntry reports whether f is an operator or kernel entry point, wherever it is
// defined: a structured kernel (TORCH_IMPL_FUNC(name)), or a name whose snake_case parts
// include "mps" or "kernel", as PyTorch names its MPS operators and dispatch-stub kernels
// (add_out_mps, _mps_linear, lshift_kernel_mps, cumsum_kernel).
func operatorEntry(f *function) bool {
	if f.EntryMacro() {
		return true
	}
	for rest := f.Bare(); rest != ""; {
		part, after, found := strings.Cut(rest, "_")
		if part == "mps" || part == "kernel" {
			return f.Bare() != part // a part, not the whole name
		}
		if !found {
			break
		}
		rest = after
	}
	return false
}

// allocatorPath reports whether f is an allocator's per-buffer entry point (its class is
// an allocator and its name speaks of buffers or events): called for every tensor an
// operator touches, as malloc and free are.
func allocatorPath(f *function) bool {
	if !strings.Contains(strings.ToLower(f.Class()), "allocator") {
		return false
	}
	l := strings.ToLower(f.Bare())
	return strings.Contains(l, "buffer") || strings.Contains(l, "event")
}

// deviceWideSync reports whether a function of this (bare) name synchronises the whole
// device: torch.mps.synchronize and torch.accelerator.synchronize (deviceSynchronize,
// synchronizeDevice, the Python module's synchronize), emptyCache and the cache release
// behind it, and event timing.
func deviceWideSync(name string) bool {
	l := strings.ToLower(name)
	for _, w := range [...]string{"devicesynchron", "synchronizedevice", "synchronizeall", "module_synchronize",
		"emptycache", "release_cached", "releasecached", "elapsedtime"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// singleStreamSync (MPS009): stream->synchronize(...) in a device-wide synchronisation,
// outside a loop (a loop over the streams is how every stream is waited for).
func (m *extractor) singleStreamSync(i int32, f *function, fx *facts) {
	if !deviceWideSync(f.Bare()) || !m.Is(i+1, "(") || !(m.Is(i-1, "->") || m.Is(i-1, ".")) {
		return
	}
	for s := m.ScopeOf(i); s >= 0 && m.Scope(s).Kind() != cxx.ScopeFunction; s = m.Scope(s).Parent() {
		sc := m.Scope(s)
		if sc.Kind() == cxx.ScopeControl {
			if h := m.StripPrefix(m.scopeHead(s), sc.Open()); m.Is(h, "for") || m.Is(h, "while") || m.Is(h, "do") {
				return
			}
		}
	}
	what := "one stream"
	switch r := m.receiverCall(i - 1); r {
	case "getCurrentMPSStream":
		what = "the calling thread's stream only"
	case "getDefaultMPSStream":
		what = "the default stream only"
	}
	fx.direct = append(fx.direct, m.finding(i, "MPS009",
		fmt.Sprintf("device-wide synchronisation %s waits for %s, not for every stream", f.Name(), what)))
}

// receiverCall returns the name of the call that produces the receiver before the -> or .
// at op (getDefaultMPSStream for getDefaultMPSStream()->synchronize), or "".
func (m *extractor) receiverCall(op int32) string {
	if m.Is(op-1, ")") {
		if o := m.Match(op - 1); o > 0 && m.IsIdent(o-1) {
			return m.Text(o - 1)
		}
	}
	return ""
}

// scopeHead returns the first token of the statement that opens scope s: the control word
// of a loop or if, found by walking back from the brace over the condition's parentheses.
func (m *extractor) scopeHead(s int32) int32 {
	open := m.Scope(s).Open()
	j := open - 1
	if m.Is(j, ")") && m.Match(j) >= 0 {
		j = m.Match(j) - 1
	}
	return j
}

// explicitLock returns the first lock held at i by a lock statement, m.lock(),
// @synchronized or a *Locked function's caller (not a serial queue or call_once), or "".
func (m *extractor) explicitLock(i int32) string {
	for _, h := range m.HeldDetail(i) {
		switch h.Kind {
		case "", "@synchronized", "caller":
			if h.Kind == "caller" {
				return "the lock its caller holds (by the *Locked convention)"
			}
			return h.Name
		}
	}
	return ""
}

// gpuWait (MPS008): waitUntilCompleted, commitAndWait(), waitUntilSignaledValue: or
// synchronize(...COMMIT_AND_WAIT...) with a lock held.
func (m *extractor) gpuWait(i int32, fx *facts) {
	name := m.Text(i)
	switch {
	case name == "synchronize":
		if !m.Is(i+1, "(") || m.Match(i+1) <= i+1 {
			return
		}
		if !m.HasToken(i+2, m.Match(i+1), "COMMIT_AND_WAIT") {
			return
		}
	case name == "commitAndWait":
		if !m.Is(i+1, "(") || m.Is(i-1, "void") || m.Is(i-1, "::") {
			return
		}
	default: // ObjC sends: [cb waitUntilCompleted], [event waitUntilSignaledValue:v timeoutMS:t]
		if !(m.Is(i+1, "]") || m.Is(i+1, ":")) || !m.IsIdent(i-1) && !m.Is(i-1, "]") && !m.Is(i-1, ")") {
			return
		}
	}
	lock := m.explicitLock(i)
	if lock == "" {
		return
	}
	fx.direct = append(fx.direct, m.finding(i, "MPS008",
		fmt.Sprintf("%s waits for the GPU while %s is held", name, lock)))
}

// nestedDispatch (MPS008): dispatch_sync onto a queue with a lock held, or from inside a
// dispatch_sync block on another queue.
func (m *extractor) nestedDispatch(i int32, fx *facts) {
	if !m.Is(i+1, "(") || m.Match(i+1) <= i+1 {
		return
	}
	queue := m.LastName(i+2, m.TopLevelComma(i+2, m.Match(i+1)))
	for _, h := range m.HeldDetail(i) {
		msg := ""
		switch h.Kind {
		case "", "@synchronized":
			msg = fmt.Sprintf("%s onto %s while %s is held: work on that queue that takes the lock deadlocks", m.Text(i), queue, h.Name)
		case "caller":
			msg = fmt.Sprintf("%s onto %s while the caller's lock is held (by the *Locked convention)", m.Text(i), queue)
		case "dispatch_sync", "dispatch_sync_with_rethrow", "dispatch_barrier_sync":
			if h.Name == queue {
				continue
			}
			msg = fmt.Sprintf("%s onto %s from inside a %s block on %s: two queues held at once", m.Text(i), queue, h.Kind, h.Name)
		default:
			continue
		}
		fx.direct = append(fx.direct, m.finding(i, "MPS008", msg))
		return
	}
}

// offQueue: command-buffer primitives called with no lock and off the serial queue.
// synchronize() is a public entry point that must be safe by itself, so only its bare
// (this->) calls inside the stream count; the others assume the caller is on the queue.
func (m *extractor) offQueue(i int32, f *function, fx *facts) {
	if !m.Is(i+1, "(") {
		return
	}
	prev := i - 1
	external := m.Is(prev, ".") || m.Is(prev, "->")
	if external && (m.Is(prev-1, "this") || m.Is(prev-1, "self")) {
		external = false
	}
	if m.IsIdent(prev) && !cxx.IsNotDeclPrev(m.Bytes(prev)) || m.Is(prev, "~") || m.Is(prev, "::") && !m.IsIdent(prev-1) {
		return // a declaration, not a call
	}
	if external && m.Is(i, "synchronize") {
		return
	}
	if m.Locked(i) {
		return
	}
	name := m.Text(i)
	fd := m.finding(i, "MPS004",
		fmt.Sprintf("%s() touches command-buffer state in %s with no lock held and outside dispatch_sync on the stream's serial queue", name, f.Name()))
	fd.callee = name
	fx.direct = append(fx.direct, fd)
}

// selfLockingPrimitives are the command-buffer primitives whose call is safe when their
// definition takes the lock itself: they finish their work inside it and return nothing
// the caller goes on using (commandEncoder() returns an encoder the caller keeps using
// after the lock is gone, so it is not one of them).
var selfLockingPrimitives = map[string]bool{"endKernelCoalescing": true, "commit": true}

// primitiveDefinition records whether the definition of function f, if it is one of the
// self-locking primitives, takes a lock as its first statement (or runs its whole body in
// dispatch_sync).
func (m *extractor) primitiveDefinition(f *function, fx *facts) {
	if !selfLockingPrimitives[f.Bare()] || f.Scope() <= 0 {
		return
	}
	sc := m.Scope(f.Scope())
	first := f.Open() + 1
	for first < f.Close() && !m.Is(first, ";") && !m.Is(first, "{") {
		first++
	}
	locks := false
	for ev := range sc.Locks() {
		if !ev.Release && ev.Pos == first {
			locks = true
		}
	}
	if !locks && first < f.Close() && m.Is(first, "{") {
		// dispatch_sync(queue, ^{ ... }); as the whole body
		if inner := m.ScopeOf(first); m.Scope(inner).Region() != "" && m.Scope(inner).RegionKind() != "call_once" {
			locks = true
		}
	}
	fx.primitives = append(fx.primitives, primitiveDef{bare: f.Bare(), selfLocked: locks})
}

// isMutator: container methods that change the container (asked of every x.f( call).
func isMutator(b []byte) bool {
	switch string(b) {
	case "insert", "emplace", "try_emplace", "emplace_hint", "insert_or_assign", "push_back",
		"emplace_back", "push_front", "emplace_front", "pop_back", "pop_front", "push", "pop",
		"erase", "clear", "resize", "swap", "merge", "extract":
		return true
	}
	return false
}

// isObjCMutator: Foundation messages that change a mutable collection.
func isObjCMutator(b []byte) bool {
	switch string(b) {
	case "setObject", "addObject", "removeObjectForKey", "removeAllObjects", "removeObject",
		"setValue", "insertObject", "removeLastObject", "addEntriesFromDictionary",
		"removeObjectsForKeys", "setObject:forKeyedSubscript":
		return true
	}
	return false
}

// rootRef reports whether the identifier at i is a plain reference to a variable (x,
// this->x, self->x, C::x) and returns its qualifier.
func (m *extractor) rootRef(i int32) (qual string, ok bool) {
	switch {
	case m.Is(i-1, ".") || m.Is(i-1, "->"):
		if m.Is(i-2, "this") || m.Is(i-2, "self") {
			return "", true
		}
		return "", false
	case m.Is(i-1, "::"):
		if m.IsIdent(i - 2) {
			if m.Is(i-3, "::") && !m.IsIdent(i-4) || !m.Is(i-3, "::") {
				q := m.Text(i - 2)
				if q == "std" || q == "c10" || q == "at" {
					return "", false
				}
				return q, true
			}
		}
		return "", true
	}
	return "", true
}

// containerMutation: x.insert(...), x->push_back(...), x[k] = v.
func (m *extractor) containerMutation(i, fi int32, fx *facts) {
	if !m.IsIdent(i) {
		return
	}
	mut := false
	switch {
	case (m.Is(i+1, ".") || m.Is(i+1, "->")) && m.IsIdent(i+2) && m.Is(i+3, "("):
		mut = isMutator(m.Bytes(i + 2))
	case m.Is(i+1, "["):
		if c := m.Match(i + 1); c > i+1 && m.Is(c+1, "=") {
			mut = true
		}
	}
	if !mut {
		return
	}
	m.containerCandidate(i, fi, fx)
}

// objcMutation: [dict setObject:v forKey:k], [arr addObject:x], [dict removeAllObjects].
func (m *extractor) objcMutation(i, fi int32, fx *facts) {
	x := i + 1
	if (m.Is(x, "self") || m.Is(x, "this")) && m.Is(x+1, "->") {
		x += 2
	}
	if !m.IsIdent(x) || !m.IsIdent(x+1) || !isObjCMutator(m.Bytes(x+1)) {
		return
	}
	if !(m.Is(x+2, ":") || m.Is(x+2, "]")) {
		return
	}
	m.containerCandidate(x, fi, fx)
}

func (m *extractor) containerCandidate(i, fi int32, fx *facts) {
	qual, ok := m.rootRef(i)
	if !ok || m.Locked(i) {
		return
	}
	f := &m.funcs[fi]
	name := m.Text(i)
	c := candidate{kind: candContainer, name: name, qual: qual, class: f.Class(), inCtor: f.Ctor()}
	if qual == "" {
		if d, ok := f.Static(name); ok {
			if d.Atomic {
				return
			}
			c.localStatic = ownDecl(d)
		} else if m.isLocal(fi, name) {
			return
		}
	}
	c.finding = m.pending(i, "MPS002")
	fx.cands = append(fx.cands, c)
}

// isNullWord: the spellings of a null pointer.
func isNullWord(b []byte) bool {
	switch string(b) {
	case "nullptr", "nil", "NULL", "0", "Nil":
		return true
	}
	return false
}

// nullInit: if (!x) x = ...; if (x == nullptr) { x = ...; } with an assignment made with
// no lock held.
func (m *extractor) nullInit(i, fi int32, fx *facts) {
	cl, at, ok := m.nullTest(i)
	if !ok {
		return
	}
	name := m.Text(at)
	qual, ok := m.rootRef(at)
	if !ok || !m.unlockedAssignment(i, cl, name) {
		return
	}
	f := &m.funcs[fi]
	cand := candidate{kind: candNullInit, name: name, qual: qual, class: f.Class(), inCtor: f.Ctor()}
	if qual == "" {
		if d, ok := f.Static(name); ok {
			if d.Atomic {
				return // (a check-then-act on an atomic is judged by no rule yet)
			}
			cand.localStatic = ownDecl(d)
		} else if m.isLocal(fi, name) {
			return
		}
	}
	cand.finding = m.pending(i, "MPS001")
	fx.cands = append(fx.cands, cand)
}

// nullTest recognises the condition of the if at i as a test that a reference is null:
// (!x), (nullptr == x), (x == nullptr) (and if constexpr): the index of the ')' closing
// the condition and of the reference's last name.
func (m *extractor) nullTest(i int32) (cl, at int32, ok bool) {
	j := i + 1
	if m.Is(j, "constexpr") {
		j++
	}
	if !m.Is(j, "(") || m.Match(j) <= j {
		return 0, 0, false
	}
	cl = m.Match(j)
	c := j + 1
	switch {
	case m.Is(c, "!"):
		at = m.refEnd(c+1, cl)
		ok = at >= 0 && at+1 == cl
	case isNullWord(m.Bytes(c)) && m.Is(c+1, "=="):
		at = m.refEnd(c+2, cl)
		ok = at >= 0 && at+1 == cl
	default:
		at = m.refEnd(c, cl)
		ok = at >= 0 && m.Is(at+1, "==") && isNullWord(m.Bytes(at+2)) && at+3 == cl
	}
	return cl, at, ok
}

// unlockedAssignment reports whether the body of the if at i, whose condition closes at
// cl (a braced block or one statement), assigns name with no lock held.
func (m *extractor) unlockedAssignment(i, cl int32, name string) bool {
	bs, be := cl+1, cl+1
	if m.Is(bs, "{") && m.Match(bs) > bs {
		be = m.Match(bs)
	} else {
		for be < m.Len() && !(m.Is(be, ";") && m.ScopeOf(be) == m.ScopeOf(i)) {
			be++
		}
	}
	for k := bs; k < be; k++ {
		if m.IsIdent(k) && string(m.Bytes(k)) == name && m.Is(k+1, "=") {
			if _, ok := m.rootRef(k); ok && !m.Locked(k) {
				return true
			}
		}
	}
	return false
}

// refEnd parses a reference (x, this->x, self->x, C::x) starting at s before e and returns
// the index of its last identifier, or -1.
func (m *extractor) refEnd(s, e int32) int32 {
	if (m.Is(s, "this") || m.Is(s, "self")) && m.Is(s+1, "->") {
		s += 2
	}
	for m.IsIdent(s) && m.Is(s+1, "::") && s+2 < e {
		s += 2
	}
	if s < e && m.IsIdent(s) {
		return s
	}
	return -1
}

// finding builds a finding of rule at code token i.
func (m *extractor) finding(i int32, rule, msg string) Finding {
	fn := ""
	if f := m.Scope(m.ScopeOf(i)).Fn(); f >= 0 {
		fn = m.funcs[f].Name()
	}
	f := m.findingAt(m.Tok(i), i, rule, msg, "")
	f.Function = fn
	if fi := m.Scope(m.ScopeOf(i)).Fn(); fi >= 0 {
		f.fnClass, f.fnBare = m.funcs[fi].Class(), m.funcs[fi].Bare()
	}
	return f
}

// findingAt builds a finding at token t; i is its code index (-1 for a directive, whose
// statement text is given).
func (m *extractor) findingAt(t cxx.Token, i int32, rule, msg, stmt string) Finding {
	r := rulesByKey()[rule]
	line, col := m.RunePos(t)
	if i >= 0 {
		stmt = m.statementText(i)
	}
	return Finding{Rule: r.ID, Name: r.Name, Severity: r.Severity, File: m.Path(), Line: line, Col: col,
		Message: msg, Fix: r.Fix, Statement: stmt}
}

const maxStatementTokens = 40

// statementText is the normalised token text (single spaces) of the statement around code
// token i: from after the previous ; { or } to the next one.
func (m *extractor) statementText(i int32) string {
	s := i
	for s > 0 && !(m.Is(s-1, ";") || m.Is(s-1, "{") || m.Is(s-1, "}")) && i-s < maxStatementTokens {
		s--
	}
	e := i
	for e < m.Len()-1 && !(m.Is(e, ";") || m.Is(e, "{") || m.Is(e, "}")) && e-i < maxStatementTokens {
		e++
	}
	var sb strings.Builder
	size := 0 // one allocation: the tokens and a space after each
	for k := s; k <= e && k < m.Len(); k++ {
		size += int(m.Tok(k).End-m.Tok(k).Off) + 1
	}
	sb.Grow(size)
	for k := s; k <= e && k < m.Len(); k++ {
		if k > s {
			sb.WriteByte(' ')
		}
		sb.Write(m.Bytes(k))
	}
	return sb.String()
}

type memberKey struct{ class, name string }

// symtab merges the declarations of every audited file. Each symbol's merged view is built
// once, when the table is: judging a candidate is a map lookup, so a name declared D times
// (a file-static repeated in every file) costs O(D) in all, not O(D²) per candidate.
type symtab struct {
	members map[memberKey]declView // made when the first file is added
	globals map[string]globalDecls
	files   int // how many files will be added
	// single and many: classes with a process-wide object, and classes with many (per
	// thread, in a container or array); derived lists each class's derived classes.
	single, many map[string]bool
	derived      map[string][]string
	// pooled: classes whose objects are held in a container (MPS012).
	pooled    map[string]bool
	pooledIdx pooledIndex
}

// declView is the merged view of a symbol's declarations. While there is one, it points
// at that declaration (no copy); the second makes it a copy that merges them.
type declView struct {
	d     *cxx.Decl
	owned bool
}

func (v *declView) merge(d *cxx.Decl) {
	switch {
	case v.d == nil:
		v.d = d
		return
	case !v.owned:
		c := *v.d
		v.d, v.owned = &c, true
	}
	into := v.d
	into.ThreadLocal = into.ThreadLocal || d.ThreadLocal
	into.Container = into.Container || d.Container
	into.Mutex = into.Mutex || d.Mutex
	into.Atomic = into.Atomic || d.Atomic
	into.Static = into.Static || d.Static
	into.Member = into.Member && d.Member
}

// globalDecls is the merged view of the namespace-scope declarations of one name: all of
// them (a header's extern and its definition), and, once a second file declares the name,
// those of each file (a file-static of that name in another file is a different variable).
type globalDecls struct {
	all    declView
	file   string               // the file of the first declaration
	byFile map[string]*declView // nil while every declaration is in file
}

// newSymtab returns an empty table for the declarations of files files.
func newSymtab(files int) *symtab {
	return &symtab{files: files, single: map[string]bool{}, many: map[string]bool{}, derived: map[string][]string{},
		pooled: map[string]bool{}}
}

// addFacts merges one file's declarations, instances and base classes. Files are added
// in audit order: the first declaration of a name is the one findings cite.
func (st *symtab) addFacts(fx *facts) {
	if st.members == nil {
		// Sized from the first file, as if every file declared as many members and
		// globals (and a quarter more, at most 65,536 each): a map regrown while
		// thousands of declarations go in rehashes them all.
		nm := 0
		for di := range fx.decls {
			if fx.decls[di].Class != "" {
				nm++
			}
		}
		size := func(n int) int { return min((n*st.files+3)*5/4, 1<<16) }
		st.members = make(map[memberKey]declView, size(nm))
		st.globals = make(map[string]globalDecls, size(len(fx.decls)-nm))
	}
	for di := range fx.decls {
		st.add(&fx.decls[di])
	}
	for _, in := range fx.instances {
		if in.Pooled {
			st.pooled[in.Class] = true
		}
		if in.Many {
			st.many[in.Class] = true
		} else {
			st.single[in.Class] = true
		}
	}
	for _, b := range fx.bases {
		st.derived[b.Base] = append(st.derived[b.Base], b.Class)
	}
}

// processWide reports whether the objects of class are process-wide: some static holds
// one (or one of a class derived from it) and none is per thread or one of many.
func (st *symtab) processWide(class string) bool {
	if st.many[class] {
		return false
	}
	if st.single[class] {
		return true
	}
	for _, d := range st.derived[class] {
		if st.single[d] && !st.many[d] {
			return true
		}
	}
	return false
}

func (st *symtab) add(d *cxx.Decl) {
	if d.Class != "" {
		k := memberKey{d.Class, d.Name}
		v := st.members[k]
		v.merge(d)
		st.members[k] = v
		return
	}
	g, ok := st.globals[d.Name]
	if !ok {
		g.file = d.File
	}
	if d.File != g.file && g.byFile == nil {
		// A second file declares the name: until now every declaration was in g.file.
		first := g.all
		if first.owned { // g.all's copy goes on merging other files: the view needs its own
			c := *first.d
			first.d = &c
		}
		g.byFile = map[string]*declView{g.file: &first}
	}
	if g.byFile != nil {
		v := g.byFile[d.File]
		if v == nil {
			v = &declView{}
			g.byFile[d.File] = v
		}
		v.merge(d)
	}
	g.all.merge(d)
	st.globals[d.Name] = g
}

// global is the view of name as seen from file: when file declares it and other files do
// too, only file's own declarations count.
func (st *symtab) global(name, file string) *cxx.Decl {
	g, ok := st.globals[name]
	if !ok {
		return nil
	}
	if g.byFile != nil {
		if v := g.byFile[file]; v != nil {
			return v.d
		}
	}
	return g.all.d
}

func (st *symtab) resolve(c *candidate, file string) *cxx.Decl {
	if c.localStatic != nil {
		return c.localStatic
	}
	if c.qual != "" {
		if v := st.members[memberKey{c.qual, c.name}]; v.d != nil {
			return v.d
		}
		return st.global(c.name, file)
	}
	if c.class != "" {
		if v := st.members[memberKey{c.class, c.name}]; v.d != nil {
			return v.d
		}
	}
	return st.global(c.name, file)
}

func looksLikeMember(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasSuffix(name, "_") || strings.HasPrefix(name, "m_")
}

// judge turns a candidate into a finding, or nothing.
func (st *symtab) judge(c *candidate, file string) (Finding, bool) {
	d := st.resolve(c, file)
	switch c.kind {
	case candContainer:
		return judgeContainer(c, d, file)
	case candNullInit:
		return judgeNullInit(c, d, file)
	case candPoolReset:
		return st.judgePoolReset(c, file)
	case candHotLock:
		return st.judgeHotLock(c, d, file)
	}
	return Finding{}, false
}

// judgeContainer (MPS002): a mutation with no lock held of a container d that is static,
// or a member outside its constructor. The Finding is made only for a finding: most
// candidates are not one.
func judgeContainer(c *candidate, d *cxx.Decl, file string) (Finding, bool) {
	if d == nil || !d.Container || d.ThreadLocal || d.Const {
		return Finding{}, false
	}
	if d.Member && c.inCtor {
		return Finding{}, false
	}
	f := c.finding.make(file)
	what := "static container"
	if d.Member {
		what = "member container"
	}
	f.Message = fmt.Sprintf("%s %s (declared %s:%d) is mutated with no lock held", what, d.Qualified(), d.File, d.Line)
	f.memberState = d.Member
	return f, true
}

// judgeNullInit: an unlocked if (!x) x = ... is a lazy singleton (MPS001) when x is
// static, a lazily initialised member (MPS003) when it is a member (or looks like one).
func judgeNullInit(c *candidate, d *cxx.Decl, file string) (Finding, bool) {
	if c.inCtor {
		return Finding{}, false
	}
	if d != nil && d.Atomic {
		d = nil // judged as before atomics were declarations: by the name alone
	}
	switch {
	case d != nil && d.ThreadLocal:
		return Finding{}, false
	case d != nil && d.Static:
		f := c.finding.make(file)
		r := rulesByKey()["MPS001"]
		f.Rule, f.Name, f.Severity, f.Fix = r.ID, r.Name, r.Severity, r.Fix
		f.Message = fmt.Sprintf("lazy singleton %s (declared %s:%d) is created without synchronisation", d.Qualified(), d.File, d.Line)
		return f, true
	case d != nil && d.Member, d == nil && c.class != "" && looksLikeMember(c.name):
		f := c.finding.make(file)
		r := rulesByKey()["MPS003"]
		f.Rule, f.Name, f.Severity, f.Fix = r.ID, r.Name, r.Severity, r.Fix
		f.Message = fmt.Sprintf("member %s::%s is lazily initialised (check-then-act) with no lock held", c.class, c.name)
		f.memberState = true
		return f, true
	}
	return Finding{}, false
}

// judgeHotLock (MPS006): a lock on an operator's path of a process-wide mutex d (a static,
// or a member of a process-wide object), unless a per-thread cache answers before it.
func (st *symtab) judgeHotLock(c *candidate, d *cxx.Decl, file string) (Finding, bool) {
	if d == nil || !d.Mutex || d.ThreadLocal {
		return Finding{}, false
	}
	for _, n := range c.fastPath {
		if fd := st.resolve(&candidate{name: n, class: c.class}, file); fd != nil && fd.ThreadLocal {
			return Finding{}, false // a per-thread cache answers before the lock
		}
	}
	if d.Member {
		if !st.processWide(d.Class) {
			return Finding{}, false // a per-object (per-stream) lock
		}
		f := c.finding.make(file)
		f.Message = fmt.Sprintf("mutex %s of a process-wide %s (declared %s:%d) is locked on a hot path (%s)", d.Qualified(), d.Class, d.File, d.Line, c.where)
		return f, true
	}
	f := c.finding.make(file)
	f.Message = fmt.Sprintf("process-wide mutex %s (declared %s:%d) is locked on a hot path (%s)", d.Qualified(), d.File, d.Line, c.where)
	return f, true
}
