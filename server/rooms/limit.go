package rooms

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bucket is a token bucket (golang.org/x/time/rate): it holds at most
// burst tokens, gains rate a second, and each allowed event takes one. A
// room connection owns its own.
type Bucket struct {
	l *rate.Limiter
}

// NewBucket returns a full bucket.
func NewBucket(r, burst float64, now time.Time) *Bucket {
	l := rate.NewLimiter(rate.Limit(r), int(burst))
	l.AllowN(now, 0) // count time from now
	return &Bucket{l: l}
}

// Allow takes a token if there is one.
func (b *Bucket) Allow(now time.Time) bool { return b.l.AllowN(now, 1) }

// full reports whether the bucket would be full at now: forgetting it
// changes nothing.
func (b *Bucket) full(now time.Time) bool {
	return b.l.TokensAt(now) >= float64(b.l.Burst())
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
func (l *KeyLimiter) Allow(key string, now time.Time) bool { return l.AllowN(key, now, 1) }

// AllowN reports whether key may have an event that costs n tokens at
// now, and takes them if so. An event that costs more than the burst is
// never allowed.
func (l *KeyLimiter) AllowN(key string, now time.Time, n int) bool {
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
	return b.l.AllowN(now, n)
}

// Charge takes n tokens from key's bucket at now, whether it has them or
// not: the cost of an event known only once it is done. A bucket in debt
// allows nothing until it has refilled; the debt is at most a burst.
func (l *KeyLimiter) Charge(key string, now time.Time, n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		return // forgotten meanwhile: it was full
	}
	b.l.ReserveN(now, min(n, b.l.Burst()))
}

// Burst is how many tokens a key has at most.
func (l *KeyLimiter) Burst() int { return int(l.burst) }
