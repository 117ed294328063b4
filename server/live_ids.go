package server

// recentIDs is the set of the last n ids a feed received, by 64-bit hash:
// what recognizes a relay's resend. A ring of the hashes says which is
// oldest; an open-addressing table (linear probing, deletion by backward
// shift) indexes the ring. 12 bytes an id, where a Go map of the hashes plus
// the ring took about 42 under churn: with 64 feeds remembering 16,384 ids
// each, that was the second largest use of memory after the lines.
type recentIDs struct {
	ring  []uint64 // hashes; once full, ring[next] is the oldest
	next  int
	full  bool
	slots []int32 // index into ring, or -1; len a power of two, twice len(ring) or more
}

func newRecentIDs(n int) *recentIDs {
	size := 1
	for size < 2*n {
		size <<= 1
	}
	r := &recentIDs{ring: make([]uint64, n), slots: make([]int32, size)}
	for i := range r.slots {
		r.slots[i] = -1
	}
	return r
}

func (r *recentIDs) mask() uint64 { return uint64(len(r.slots) - 1) }

// has reports whether h is among the last n hashes added.
func (r *recentIDs) has(h uint64) bool {
	for i := h & r.mask(); r.slots[i] >= 0; i = (i + 1) & r.mask() {
		if r.ring[r.slots[i]] == h {
			return true
		}
	}
	return false
}

// add adds h, forgetting the oldest hash once there are n.
func (r *recentIDs) add(h uint64) {
	if r.full {
		r.unindex(r.next)
	}
	r.ring[r.next] = h
	i := h & r.mask()
	for r.slots[i] >= 0 {
		i = (i + 1) & r.mask()
	}
	r.slots[i] = int32(r.next)
	r.next++
	if r.next == len(r.ring) {
		r.next, r.full = 0, true
	}
}

// unindex removes ring entry k from the table, moving back the entries
// after it in its probe run that would otherwise be cut off from their home.
func (r *recentIDs) unindex(k int) {
	m := r.mask()
	i := r.ring[k] & m
	for r.slots[i] != int32(k) {
		i = (i + 1) & m
	}
	for j := (i + 1) & m; r.slots[j] >= 0; j = (j + 1) & m {
		home := r.ring[r.slots[j]] & m
		// slots[j] may move to i unless its home lies cyclically in (i, j].
		if (j-home)&m >= (j-i)&m {
			r.slots[i] = r.slots[j]
			i = j
		}
	}
	r.slots[i] = -1
}
