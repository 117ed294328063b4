package rooms

import (
	"sync"
	"time"
)

// Bucket is a token bucket: it holds at most burst tokens, gains rate a
// second, and each allowed event takes one. It is not safe for concurrent
// use; a room connection owns its own.
type Bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate, burst float64, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// Allow takes a token if there is one.
func (b *Bucket) Allow(now time.Time) bool {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket would be full at now: forgetting it
// changes nothing.
func (b *Bucket) full(now time.Time) bool {
	return b.tokens+now.Sub(b.last).Seconds()*b.rate >= b.burst
}

// KeyLimiter keeps one bucket per key (a client's IP address). It forgets
// full buckets when it holds too many, so a stream of addresses cannot grow
// it without end; when every bucket is in use it refuses new keys.
type KeyLimiter struct {
	rate, burst float64
	max         int

	mu      sync.Mutex
	buckets map[string]*Bucket
}

// NewKeyLimiter allows each key burst events at once and rate a second after.
func NewKeyLimiter(rate, burst float64, maxKeys int) *KeyLimiter {
	return &KeyLimiter{rate: rate, burst: burst, max: maxKeys, buckets: map[string]*Bucket{}}
}

// Allow reports whether key may have one more event at now.
func (l *KeyLimiter) Allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.max {
			for k, b := range l.buckets {
				if b.full(now) {
					delete(l.buckets, k)
				}
			}
			if len(l.buckets) >= l.max {
				return false
			}
		}
		b = NewBucket(l.rate, l.burst, now)
		l.buckets[key] = b
	}
	return b.Allow(now)
}
