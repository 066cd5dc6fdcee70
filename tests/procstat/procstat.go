package procstat

import (
	"os"
	"strconv"
	"strings"
)

// Memory returns VmRSS and VmHWM (peak RSS) in bytes of a process ("self"
// or a PID); zeros when /proc cannot be read.
func Memory(pid string) (rss, peak int64) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return rss, peak
}

// RSSMiB is the resident memory of a PID in MiB.
func RSSMiB(pid int) float64 {
	rss, _ := Memory(strconv.Itoa(pid))
	return float64(rss) / (1 << 20)
}
