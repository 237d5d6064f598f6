#!/bin/sh
# Runs upstream Buzz's behaviour tests through `magus test`, one line per
# file and a total. Run by hand (not in CI), with a scratch checkout of
# upstream kept outside this repository:
#
#   cargo build --release
#   scripts/conformance.sh /path/to/buzz/tests/behavior [path/to/magus]
#
# Upstream runs these from its repository root, and some import siblings
# (`../utils/testing`). So the files run from a copy of upstream's `tests`
# directory inside a throw-away workspace (default policy), beside a copy
# of upstream's README.md and an empty src/, which its tests look for.
set -u
dir=${1:?usage: conformance.sh UPSTREAM_TESTS_BEHAVIOR_DIR [MAGUS]}
magus=${2:-$(dirname "$0")/../target/$(rustc -vV | sed -n 's/^host: //p')/release/magus}
ws=$(mktemp -d "${HOME:-/tmp}/.magus-conformance.XXXXXX")
trap 'rm -rf "$ws"' EXIT
: > "$ws/magus.yaml"
root="$dir/../.."
[ -f "$root/README.md" ] && cp "$root/README.md" "$ws/README.md"
mkdir -p "$ws/src" "$ws/tests"
cp -R "$dir" "$ws/tests/behavior"
[ -d "$dir/../utils" ] && cp -R "$dir/../utils" "$ws/tests/utils"
pass=0
fail=0
for file in "$ws"/tests/behavior/*.buzz; do
    name=$(basename "$file")
    out=$("$magus" --workspace "$ws" test "$file" </dev/null 2>&1)
    status=$?
    summary=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ "$status" -eq 0 ] && [ -n "$summary" ]; then
        pass=$((pass + 1))
        printf 'PASS %s (%s)\n' "$name" "$summary"
    else
        fail=$((fail + 1))
        why=$(printf '%s\n' "$out" | grep -m 1 -E '^error' | cut -c1-120)
        printf 'FAIL %s: %s\n' "$name" "${why:-exit $status}"
    fi
done
echo "total: $pass passed, $fail failed of $((pass + fail)) files"
