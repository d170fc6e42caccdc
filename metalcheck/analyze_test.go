package metalcheck

import (
	"strings"
	"testing"
)

// TestHeldRefs: the locks held at a point, named as written, with the ones reached
// through another object (an element, a member of another object, a stream's queue)
// told apart: they are one per object.
func TestHeldRefs(t *testing.T) {
	src := `void Pool::f(Shard& shard) {
  std::lock_guard<std::mutex> a(m_pools[i].mutex);
  A;
  {
    std::lock_guard<std::mutex> b(shard.mutex);
    std::scoped_lock c(Lib::s_mutex, this->m_own);
    B;
  }
  held->mutex.lock();
  C;
  held->mutex.unlock();
  dispatch_sync(stream->queue(), ^{ D; });
  dispatch_sync(_serialQueue, ^{ E; });
}
`
	m := analyze("x.mm", []byte(src))
	want := map[string]string{
		"A": "mutex of another object (a per-object or sharded lock)",
		"B": "mutex of another object (a per-object or sharded lock), mutex of another object (a per-object or sharded lock), Lib::s_mutex, m_own",
		"C": "mutex of another object (a per-object or sharded lock), mutex of another object (a per-object or sharded lock)",
		"D": "queue of another object (a per-object or sharded lock), mutex of another object (a per-object or sharded lock)",
		"E": "_serialQueue, mutex of another object (a per-object or sharded lock)",
	}
	for i := range m.Len() {
		w, ok := want[m.Text(int32(i))]
		if !ok {
			continue
		}
		var have []string
		for _, r := range m.heldRefs(int32(i), "Pool") {
			if r.class != "Pool" {
				t.Errorf("%s: lock %s has class %q, want Pool", m.Text(int32(i)), r, r.class)
			}
			have = append(have, r.String())
		}
		if got := strings.Join(have, ", "); got != w {
			t.Errorf("locks at %s:\nhave %s\nwant %s", m.Text(int32(i)), got, w)
		}
	}
}
