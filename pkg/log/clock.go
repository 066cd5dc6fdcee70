package log

import "time"

// now is the time stamp source; tests may replace it.
var now = time.Now
