package server

import (
	"math/rand/v2"
	"testing"
)

// recentIDs against the obvious model (a slice of the last n), with hashes
// drawn from a small range so that probe runs collide, wrap and shift.
func TestRecentIDs(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 64, 1000} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		r := newRecentIDs(n)
		var model []uint64
		for step := range 20 * n {
			h := rng.Uint64N(uint64(4*n)) | rng.Uint64N(4)<<40 // collide in the table's low bits
			if step%3 == 0 {
				h = rng.Uint64() // and some that do not
			}
			r.add(h)
			model = append(model, h)
			if len(model) > n {
				model = model[1:]
			}
			for probe := range 5 {
				q := rng.Uint64N(uint64(4*n)) | uint64(probe%4)<<40
				if probe == 0 && len(model) > 0 {
					q = model[rng.IntN(len(model))]
				}
				want := false
				for _, m := range model {
					want = want || m == q
				}
				if got := r.has(q); got != want {
					t.Fatalf("n=%d step %d: has(%#x) = %v, want %v", n, step, q, got, want)
				}
			}
		}
		used := 0
		for _, s := range r.slots {
			if s >= 0 {
				used++
			}
		}
		if used != len(model) {
			t.Fatalf("n=%d: %d slots used for %d ids", n, used, len(model))
		}
	}
}

func BenchmarkRecentIDs(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	hs := make([]uint64, 1<<16)
	for i := range hs {
		hs[i] = rng.Uint64()
	}
	b.Run("recentIDs", func(b *testing.B) {
		r := newRecentIDs(idsKept)
		for i := 0; b.Loop(); i++ {
			h := hs[i&(len(hs)-1)]
			if !r.has(h) {
				r.add(h)
			}
		}
	})
	b.Run("map+ring", func(b *testing.B) {
		seen := make(map[uint64]struct{})
		var ring []uint64
		next := 0
		for i := 0; b.Loop(); i++ {
			h := hs[i&(len(hs)-1)]
			if _, ok := seen[h]; ok {
				continue
			}
			if len(ring) < idsKept {
				ring = append(ring, h)
			} else {
				delete(seen, ring[next])
				ring[next] = h
				next = (next + 1) % idsKept
			}
			seen[h] = struct{}{}
		}
	})
}
