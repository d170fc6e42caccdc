package streammodel

import "fmt"

// CompileVariant is how the graph cache serialises the first compile of a key (SPEC item 7).
type CompileVariant int

const (
	// PerKeyLock is SPEC item 7: a thread-local hit takes no lock; a miss finds the key's
	// entry in a sharded table (the shard's lock held only for the lookup) and takes the
	// entry's own lock; the first thread compiles and first-encodes under it, the others
	// wait and reuse what it compiled.
	PerKeyLock CompileVariant = iota
	// NoKeyLock (broken: per-thread caches alone, 0003/0016): each thread that misses
	// compiles, so N threads compile one graph at once (the seeds' "Invalid KernelDAG").
	NoKeyLock
	// GlobalLockOnLookup (broken the other way): one process-wide lock around every
	// lookup, hits included: compiles once, but the steady state takes a global lock.
	GlobalLockOnLookup
)

func (v CompileVariant) String() string {
	return [...]string{"per-key-lock", "no-key-lock", "global-lock-on-lookup"}[v]
}

// An Executable is a compiled graph (an MPSGraphExecutable, or a cached graph after its
// first encode).
type Executable struct {
	Key string
	ID  int
}

type cacheEntry struct {
	mu  *Mutex
	exe *Executable
}

type cacheShard struct {
	mu      *Mutex
	entries map[string]*cacheEntry
}

// A GraphCache is the process-wide side of the graph cache: the table that serialises
// first compiles.
type GraphCache struct {
	variant   CompileVariant
	shards    []*cacheShard
	global    *Mutex
	compiling map[string]int
	compiled  map[string]int
	nextExe   int
}

// A LocalCache is one thread's own cache (thread_local in PyTorch): no lock guards it.
type LocalCache struct {
	m map[string]*Executable
}

// NewLocalCache makes an empty thread-local cache.
func NewLocalCache() *LocalCache { return &LocalCache{m: map[string]*Executable{}} }

// NewGraphCache makes a cache with the given number of shards.
func NewGraphCache(variant CompileVariant, shards int) *GraphCache {
	c := &GraphCache{variant: variant, global: NewMutex("global graph cache lock", false),
		compiling: map[string]int{}, compiled: map[string]int{}}
	for i := range shards {
		c.shards = append(c.shards, &cacheShard{mu: NewMutex(fmt.Sprintf("shard lock %d", i), false), entries: map[string]*cacheEntry{}})
	}
	return c
}

func (c *GraphCache) shard(key string) *cacheShard {
	h := 0
	for _, r := range key {
		h = h*31 + int(r)
	}
	if h < 0 {
		h = -h
	}
	return c.shards[h%len(c.shards)]
}

// Compiled reports how many times key was compiled. Call it inside an action.
func (c *GraphCache) Compiled(key string) int { return c.compiled[key] }

// Lookup is LookUpOrCreateCachedGraph for key from thread t with its local cache. It
// checks that a hit takes no lock and that no key is compiled twice or by two threads at
// once.
func (c *GraphCache) Lookup(t *Thread, local *LocalCache, key string) *Executable {
	taken := t.LocksTaken
	if c.variant == GlobalLockOnLookup {
		c.global.Lock(t)
		defer c.global.Unlock(t)
	}
	if exe := local.m[key]; exe != nil {
		t.Do(func() {
			if t.LocksTaken != taken {
				t.w.Violatef("%s: a thread-local cache hit for %q took a lock", t.Name, key)
			}
		})
		t.Note("hit")
		return exe
	}
	var exe *Executable
	switch c.variant {
	case PerKeyLock:
		sh := c.shard(key)
		var e *cacheEntry
		sh.mu.Lock(t)
		t.Do(func() {
			e = sh.entries[key]
			if e == nil {
				e = &cacheEntry{mu: NewMutex("key lock "+key, false)}
				sh.entries[key] = e
			}
		})
		sh.mu.Unlock(t)
		e.mu.Lock(t)
		if e.exe == nil {
			e.exe = c.compile(t, key)
		}
		exe = e.exe
		e.mu.Unlock(t)
	case NoKeyLock:
		sh := c.shard(key)
		sh.mu.Lock(t)
		t.Do(func() {
			if e := sh.entries[key]; e != nil {
				exe = e.exe
			}
		})
		sh.mu.Unlock(t)
		if exe == nil {
			exe = c.compile(t, key)
			sh.mu.Lock(t)
			t.Do(func() {
				if sh.entries[key] == nil {
					sh.entries[key] = &cacheEntry{exe: exe}
				}
			})
			sh.mu.Unlock(t)
		}
	case GlobalLockOnLookup:
		t.Do(func() {
			if e := c.shard(key).entries[key]; e != nil {
				exe = e.exe
			}
		})
		if exe == nil {
			exe = c.compile(t, key)
			t.Do(func() { c.shard(key).entries[key] = &cacheEntry{exe: exe} })
		}
	}
	local.m[key] = exe
	return exe
}

// compile is building and first-encoding the graph: two steps with a scheduling point
// between them, so two compiles of one key can overlap.
func (c *GraphCache) compile(t *Thread, key string) *Executable {
	t.Do(func() {
		c.compiling[key]++
		c.compiled[key]++
		switch {
		case c.compiling[key] > 1:
			t.w.Violatef("%s: %d threads compile graph %q at once (MPSGraph compilation is not thread-safe)", t.Name, c.compiling[key], key)
		case c.compiled[key] > 1:
			t.w.Violatef("%s: graph %q compiled %d times", t.Name, key, c.compiled[key])
		}
	})
	t.Yield("compiling " + key)
	var exe *Executable
	t.Do(func() {
		c.compiling[key]--
		c.nextExe++
		exe = &Executable{Key: key, ID: c.nextExe}
	})
	return exe
}
