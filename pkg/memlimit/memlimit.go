package memlimit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction of the cgroup limit used as the soft limit: the rest is room for
// what the Go runtime does not count (stacks of cgo, the binary, page cache
// charged to the cgroup).
const Fraction = 0.9

// unlimitedV1 is the smallest value cgroup v1 uses for "no limit" (the page
// counter maximum, rounded to the page size, is close to MaxInt64).
const unlimitedV1 = 1 << 62

// CgroupLimit returns the memory limit of the cgroup the process runs in,
// read below root (normally "/sys/fs/cgroup"): cgroup v2's memory.max,
// else cgroup v1's memory.limit_in_bytes. ok is false when there is no
// limit or no cgroup file.
func CgroupLimit(root string) (limit int64, ok bool, err error) {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false, errors.New(f + ": " + err.Error())
		}
		if v <= 0 || v >= unlimitedV1 {
			return 0, false, nil
		}
		return v, true, nil
	}
	return 0, false, nil
}

// Apply sets the soft memory limit to Fraction of the cgroup limit found
// below root, unless GOMEMLIMIT is set. It returns the limit set (0 when
// none) and what it did, for the log.
func Apply(root string) (int64, string) {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return 0, "GOMEMLIMIT=" + v + " set explicitly"
	}
	limit, ok, err := CgroupLimit(root)
	if err != nil {
		return 0, "no memory limit set: " + err.Error()
	}
	if !ok {
		return 0, "no cgroup memory limit: no soft memory limit set"
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft, "soft memory limit " + strconv.FormatInt(soft>>20, 10) + "MiB (90% of the cgroup limit " + strconv.FormatInt(limit>>20, 10) + "MiB)"
}
