#!/bin/sh
# Runs upstream Buzz's fuzzed programs (tests/fuzzed, crash inputs found by
# AFL against upstream's own VM) through `magus check` and `magus run` with
# the sandbox on, and counts panics and hangs; both must stay at 0. Run by
# hand, with a scratch checkout of upstream kept outside this repository:
#
#   cargo build --release
#   scripts/fuzzed.sh /path/to/buzz/tests/fuzzed [path/to/magus]
#
# A panic is exit status 101 or "panicked" in the output; a hang is a run
# still going after 30 s (killed, status 137). Other statuses are the
# expected refusals: 2 a check error, 126 nothing ran, 124 a denial.
set -u
dir=${1:?usage: fuzzed.sh UPSTREAM_TESTS_FUZZED_DIR [MAGUS]}
magus=${2:-$(dirname "$0")/../target/$(rustc -vV | sed -n 's/^host: //p')/release/magus}
ws=$(mktemp -d "${HOME:-/tmp}/.magus-fuzzed.XXXXXX")
trap 'rm -rf "$ws"' EXIT
printf 'sandbox:\n  enabled: true\n' > "$ws/magus.yaml"
files=0 panics=0 hangs=0
for file in "$dir"/*.buzz; do
    files=$((files + 1))
    for cmd in check run; do
        out=$(timeout -s KILL 30 "$magus" --workspace "$ws" "$cmd" "$file" </dev/null 2>&1)
        status=$?
        if [ "$status" -eq 137 ]; then
            hangs=$((hangs + 1))
            printf 'HANG %s %s\n' "$cmd" "$file"
        elif [ "$status" -eq 101 ] || printf '%s' "$out" | grep -q panicked; then
            panics=$((panics + 1))
            printf 'PANIC %s %s\n' "$cmd" "$file"
        fi
        printf '%s %s\n' "$cmd" "$status" >> "$ws/statuses"
    done
done
sort "$ws/statuses" | uniq -c
echo "total: $files files, $panics panics, $hangs hangs"
