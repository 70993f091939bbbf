package scheduler

import (
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
