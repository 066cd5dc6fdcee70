package ring

// Ring keeps the last len(buf) values.
type Ring[T any] struct {
	buf  []T
	next int
	full bool
}

// New keeps the last size values (at least one).
func New[T any](size int) *Ring[T] { return &Ring[T]{buf: make([]T, max(size, 1))} }

// Add remembers v, evicting the oldest value when full.
func (r *Ring[T]) Add(v T) {
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
}

// List returns the remembered values, newest first; the slice is the caller's.
func (r *Ring[T]) List() []T {
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	out := make([]T, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}
