package probe

// kernelName is the compute function in kernelSource.
const kernelName = "mpspatch_probe_fill"

// kernelSource is the Metal shading language source of the probe kernel. Each thread i
// writes expected(worker, iteration, i) into the worker's own buffer, so a value that lands
// in the wrong buffer, or a stale one, names who wrote it. Keep the arithmetic identical to
// expected: both wrap modulo 2^32 and use the same constants.
const kernelSource = `#include <metal_stdlib>
using namespace metal;

struct Params {
    uint worker;
    uint iteration;
    uint count;
};

kernel void mpspatch_probe_fill(device uint *out [[buffer(0)]],
                                constant Params &p [[buffer(1)]],
                                uint i [[thread_position_in_grid]])
{
    if (i >= p.count) {
        return;
    }
    out[i] = ((p.worker + 1u) * 2654435761u) ^ ((p.iteration + 1u) * 2246822519u) ^ (i * 3266489917u);
}
`

// expected is the value the probe kernel writes at index i for worker and iteration.
func expected(worker, iteration, i uint32) uint32 {
	return ((worker + 1) * 2654435761) ^ ((iteration + 1) * 2246822519) ^ (i * 3266489917)
}

// Origin names the dispatch that wrote a value.
type Origin struct {
	Worker    int `json:"worker"`
	Iteration int `json:"iteration"`
}

// whoWrote finds the dispatch among workers 0..workers-1 and iterations from..to-1 whose
// kernel would have written have at index i, so a mismatch can say where the value came
// from. It returns false when no such dispatch explains the value (garbage, or a buffer
// nobody wrote).
func whoWrote(have uint32, i uint32, workers, from, to int) (Origin, bool) {
	for w := 0; w < workers; w++ {
		for it := max(from, 0); it < to; it++ {
			if expected(uint32(w), uint32(it), i) == have {
				return Origin{Worker: w, Iteration: it}, true
			}
		}
	}
	return Origin{}, false
}
