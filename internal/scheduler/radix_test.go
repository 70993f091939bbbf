package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 255, 256, 1000, 70000} {
		for _, mask := range []uint64{0xff, 0xffff_ffff, ^uint64(0), 0xffff_0000_0000} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = rng.Uint64() & mask
			}
			if n%2 == 0 && mask == ^uint64(0) { // low halves ascending, as the callers' (score, index) keys
				for i := range keys {
					keys[i] = keys[i]&^0xffff_ffff | uint64(i)
				}
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			radixSort(keys)
			if !slices.Equal(keys, want) {
				t.Fatalf("n=%d mask=%x: not sorted", n, mask)
			}
		}
	}
}

// TestRadixSortKeepsQueueOrderWithinAScore: many equal scores over ascending indexes (the callers' keys) come out
// by score, each score's indexes still ascending.
func TestRadixSortKeepsQueueOrderWithinAScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 100000)
	for i := range keys {
		keys[i] = rng.Uint64N(7)<<32 | uint64(i)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	radixSort(keys)
	if !slices.Equal(keys, want) {
		t.Fatal("not sorted by score, then index")
	}
}

// TestRadixSortOfAFewThousandKeysAllocatesNothing: below a few thousand keys the radix sort's 65,536 counters
// (512 KB, on the heap, cleared for every digit) cost more than the keys' own comparison sort, about 0.33 ms
// against 0.02 ms for 1,000 keys: every Decide over a queue of hundreds of tasks paid that for each sort, and
// Explain's forecast, which runs Decide at every release, paid it a thousand times. Such a sort allocates
// nothing now.
func TestRadixSortOfAFewThousandKeysAllocatesNothing(t *testing.T) {
	keys := make([]uint64, 4000)
	for i := range keys {
		keys[i] = uint64(len(keys)-i)<<32 | uint64(i)
	}
	src := slices.Clone(keys)
	if n := testing.AllocsPerRun(5, func() { copy(keys, src); radixSort(keys) }); n != 0 {
		t.Errorf("radixSort of %d keys: %.0f allocations", len(keys), n)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("not sorted")
	}
}

// BenchmarkRadixSort is radixSort against the comparison sort at sizes around where it switches from one to the
// other.
func BenchmarkRadixSort(b *testing.B) {
	for _, n := range []int{300, 1000, 4000, 4096, 16000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		src := make([]uint64, n)
		for i := range src {
			src[i] = rng.Uint64N(1<<20)<<32 | uint64(i)
		}
		keys := make([]uint64, n)
		b.Run(fmt.Sprintf("radixSort/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				copy(keys, src)
				radixSort(keys)
			}
		})
		b.Run(fmt.Sprintf("slices.Sort/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				copy(keys, src)
				slices.Sort(keys)
			}
		})
	}
}
