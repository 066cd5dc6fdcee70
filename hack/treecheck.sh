#!/usr/bin/env bash
# Tree hygiene, run by `make lint`: no committed executable or large binary,
# and the image's build context leaves out the history and the build outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
limit=$((2 * 1024 * 1024)) # the CRD bundles are the largest sources (~1.3 MB)
while IFS= read -r f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "treecheck: $f is $size bytes: too large to commit" >&2
		fail=1
	fi
	if head -c 4 "$f" | grep -q $'^\x7fELF'; then
		echo "treecheck: $f is a compiled executable: build outputs are not committed" >&2
		fail=1
	fi
done < <(git ls-files)
for want in .git out '*.test'; do
	if ! grep -qxF "$want" .dockerignore; then
		echo "treecheck: .dockerignore does not leave out $want" >&2
		fail=1
	fi
done
exit $fail
