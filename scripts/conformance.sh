#!/bin/sh
# Runs upstream Buzz's behaviour tests through `magus test`, one line per
# file and a total. Run by hand (not in CI), with a scratch checkout of
# upstream kept outside this repository:
#
#   cargo build --release
#   scripts/conformance.sh /path/to/buzz/tests/behavior [path/to/magus]
#
# Each file runs in a throw-away workspace with the default sandbox policy,
# holding a copy of upstream's README.md and an empty src/ (the files
# upstream's tests expect in the directory they run from).
set -u
dir=${1:?usage: conformance.sh UPSTREAM_TESTS_BEHAVIOR_DIR [MAGUS]}
magus=${2:-$(dirname "$0")/../target/release/magus}
ws=$(mktemp -d "${HOME:-/tmp}/.magus-conformance.XXXXXX")
trap 'rm -rf "$ws"' EXIT
: > "$ws/magus.yaml"
# Upstream runs these from its repository root: give the workspace the
# files they look for there.
root="$dir/../.."
[ -f "$root/README.md" ] && cp "$root/README.md" "$ws/README.md"
mkdir -p "$ws/src"
pass=0
fail=0
for file in "$dir"/*.buzz; do
    name=$(basename "$file")
    out=$("$magus" --workspace "$ws" test "$file" </dev/null 2>&1)
    status=$?
    summary=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ "$status" -eq 0 ] && [ -n "$summary" ]; then
        pass=$((pass + 1))
        echo "PASS $name ($summary)"
    else
        fail=$((fail + 1))
        why=$(printf '%s\n' "$out" | grep -m 1 -E '^(error|FAIL)' | cut -c1-200)
        echo "FAIL $name: ${why:-exit $status}"
    fi
done
echo "total: $pass passed, $fail failed of $((pass + fail)) files"
