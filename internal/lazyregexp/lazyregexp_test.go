package lazyregexp

import (
	"sync"
	"testing"
)

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^([0-9]{4})-(\w+)\.patch$`)
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = re() }()
	}
	wg.Wait()
	for _, g := range got[1:] {
		if g != got[0] {
			t.Fatal("callers got different *Regexp values")
		}
	}
	if m := re().FindStringSubmatch("0007-linear.patch"); len(m) != 3 || m[1] != "0007" {
		t.Fatalf("match: %v", m)
	}
}

func TestNewPanicsOnUseOfABadExpression(t *testing.T) {
	re := New(`(`) // constructing it must not panic: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Fatal("want a panic on first use, as regexp.MustCompile")
		}
	}()
	re()
}
