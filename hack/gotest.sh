#!/usr/bin/env bash
# Runs `go test` with the given arguments and, when it fails, repeats at the
# end of the output which tests failed and what they said, so that the last
# lines of a CI log (often all that is kept) name the failure. The exit code is
# go test's.
set -uo pipefail
GO=${GO:-go}
log=$(mktemp "${TMPDIR:-/tmp}/gotest.XXXXXX")
trap 'rm -f "$log"' EXIT
"$GO" test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo
	echo "=== summary of failures (repeated from above) ==="
	# A failing test's own lines follow its "--- FAIL" line, indented; a
	# panic or a timeout prints "panic:" and the goroutine that hung.
	awk '
		/^[[:space:]]*--- FAIL/ { show = 40; print; next }
		/^panic: / { show = 60; print; next }
		/^FAIL[[:space:]]/ { print; show = 0; next }
		show > 0 && /^[[:space:]]/ { print; show--; next }
		{ show = 0 }
	' "$log"
fi
exit "$rc"
