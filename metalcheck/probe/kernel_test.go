package probe

import (
	"regexp"
	"strconv"
	"testing"
)

// TestKernelMatchesExpected reads the three multipliers out of the Metal source and checks
// that expected uses the same ones, so the GPU's values and the check cannot drift apart.
func TestKernelMatchesExpected(t *testing.T) {
	re := regexp.MustCompile(`out\[i\] = \(\(p\.worker \+ 1u\) \* (\d+)u\) \^ \(\(p\.iteration \+ 1u\) \* (\d+)u\) \^ \(i \* (\d+)u\);`)
	m := re.FindStringSubmatch(kernelSource)
	if m == nil {
		t.Fatalf("kernel source no longer has the expected expression:\n%s", kernelSource)
	}
	var k [3]uint32
	for j := range k {
		v, err := strconv.ParseUint(m[j+1], 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		k[j] = uint32(v)
	}
	for _, c := range [][3]uint32{{0, 0, 0}, {1, 2, 3}, {15, 49, 4095}, {255, 999999, 1 << 21}, {7, 0, 100}} {
		w, it, i := c[0], c[1], c[2]
		want := ((w + 1) * k[0]) ^ ((it + 1) * k[1]) ^ (i * k[2])
		if have := expected(w, it, i); have != want {
			t.Errorf("expected(%d, %d, %d) = %#x, the kernel writes %#x", w, it, i, have, want)
		}
	}
}

func TestWhoWrote(t *testing.T) {
	tests := []struct {
		name              string
		have, index       uint32
		workers, from, to int
		want              Origin
		wantOK            bool
	}{
		{"another worker", expected(3, 7, 11), 11, 8, 0, 50, Origin{3, 7}, true},
		{"stale own value", expected(0, 4, 0), 0, 8, 0, 50, Origin{0, 4}, true},
		{"outside the window", expected(3, 7, 11), 11, 8, 10, 50, Origin{}, false},
		{"zero is nobody's", 0, 5, 4, 0, 10, Origin{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, ok := whoWrote(tt.have, tt.index, tt.workers, tt.from, tt.to)
			if ok != tt.wantOK || have != tt.want {
				t.Errorf("have %+v %v, want %+v %v", have, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// expected must differ between neighbouring workers and iterations at every index, or
// cross-talk between them would pass the check unseen.
func TestExpectedSeparatesNeighbours(t *testing.T) {
	for i := uint32(0); i < 4096; i++ {
		for w := uint32(0); w < 16; w++ {
			for it := uint32(0); it < 4; it++ {
				v := expected(w, it, i)
				if v == expected(w+1, it, i) || v == expected(w, it+1, i) {
					t.Fatalf("expected(%d, %d, %d) equals a neighbour's value", w, it, i)
				}
			}
		}
	}
}
