#!/bin/sh
# Runs upstream Buzz's behaviour files (`magus test`) and bench programs
# (`magus run`, at small sizes) through both of magus's Buzz engines, the
# compiled form and the tree walker (MAGUS_BUZZ_NO_COMPILE=1), and requires
# the same bytes on stdout and stderr (errors and their locations) and the
# same exit status from each. Run by hand, like scripts/conformance.sh
# (whose workspace it copies), with a scratch checkout of upstream:
#
#   cargo build --release
#   scripts/differential.sh /path/to/buzz/tests [path/to/magus]
#
# The programs of this repository (tests/buzz) and the fuzz corpus run
# both ways in `cargo test --lib buzz::compile` instead.
set -u
tests=${1:?usage: differential.sh UPSTREAM_TESTS_DIR [MAGUS]}
magus=${2:-$(dirname "$0")/../target/$(rustc -vV | sed -n 's/^host: //p')/release/magus}
ws=$(mktemp -d "${HOME:-/tmp}/.magus-differential.XXXXXX")
trap 'rm -rf "$ws"' EXIT
: > "$ws/magus.yaml"
[ -f "$tests/../README.md" ] && cp "$tests/../README.md" "$ws/README.md"
mkdir -p "$ws/src" "$ws/tests"
cp -R "$tests/behavior" "$ws/tests/behavior"
cp -R "$tests/bench" "$ws/tests/bench"
[ -d "$tests/utils" ] && cp -R "$tests/utils" "$ws/tests/utils"
same=0
differ=0

# Runs "$@" both ways (stdin from $input) and compares everything.
both() {
    label=$1
    shift
    "$magus" --workspace "$ws" "$@" <"$input" >"$ws/c.out" 2>"$ws/c.err"
    c=$?
    MAGUS_BUZZ_NO_COMPILE=1 "$magus" --workspace "$ws" "$@" <"$input" >"$ws/w.out" 2>"$ws/w.err"
    w=$?
    # upstream's `testing.buzz` prints how long its tests took.
    for f in "$ws"/c.out "$ws"/w.out; do
        sed -E 's/ in [0-9.e-]+ seconds/ in N seconds/' "$f" >"$f.t" && mv "$f.t" "$f"
    done
    if [ "$c" -eq "$w" ] && cmp -s "$ws/c.out" "$ws/w.out" && cmp -s "$ws/c.err" "$ws/w.err"; then
        same=$((same + 1))
        printf 'SAME %s (exit %s)\n' "$label" "$c"
    else
        differ=$((differ + 1))
        printf 'DIFFER %s: exit %s compiled, %s walked\n' "$label" "$c" "$w"
        diff "$ws/c.out" "$ws/w.out" | head -n 5
        diff "$ws/c.err" "$ws/w.err" | head -n 5
    fi
}

input=/dev/null
for file in "$ws"/tests/behavior/*.buzz; do
    both "behavior/$(basename "$file")" test "$file"
done
# Upstream's own default sizes (k-nucleoide reads fasta's output).
for spec in "ackermann 3 5" "btree 6" "bubble-sort 200" "fasta 1000" "fib" "for" \
    "grid 80 60" "merkle 6" "nbody 1000" "spectral 100"; do
    set -- $spec
    name=$1
    shift
    both "bench/$name" run "$ws/tests/bench/$name.buzz" "$@"
done
"$magus" --workspace "$ws" run "$ws/tests/bench/fasta.buzz" 1000 </dev/null |
    grep -v '^$' >"$ws/fasta.txt"
input="$ws/fasta.txt"
both "bench/k-nucleoide" run "$ws/tests/bench/k-nucleoide.buzz"
echo "total: $same the same, $differ different of $((same + differ)) runs"
[ "$differ" -eq 0 ]
