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
			want := slices.Clone(keys)
			slices.Sort(want)
			radixSort(keys)
			if !slices.Equal(keys, want) {
				t.Fatalf("n=%d mask=%x: not sorted", n, mask)
			}
		}
	}
}
