#!/usr/bin/env python3
"""`magus run` of an empty spell in four workspaces (sandbox off, on,
`network: deny`, `network.hosts`), run in turn N times, so load from other
work on a shared machine falls on all four alike; prints the median and
the minimum of each, and what each adds over `off` and over `on`. The
same workspaces as benches/run.rs. Given several binaries (an A/B of two
versions), each round runs every binary on each workspace, in alternating
order.

    cargo build --release --bin magus
    python3 scripts/startup-alternating.py target/x86_64-unknown-linux-gnu/release/magus 100
    python3 scripts/startup-alternating.py /tmp/magus-before target/x86_64-unknown-linux-gnu/release/magus 100
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

NETWORKS = {
    "off": (False, "allow"),
    "on": (True, "allow"),
    "deny": (True, "deny"),
    "hosts": (True, '{hosts: [crates.io, "*.crates.io", "github.com:443"]}'),
}


def workspace(root, name, enabled, network):
    ws = os.path.join(root, name)
    os.makedirs(os.path.join(ws, "spells"))
    with open(os.path.join(ws, "spells", "empty.buzz"), "w") as f:
        f.write("fun main(args: [str]) > void {}\n")
    with open(os.path.join(ws, "magus.yaml"), "w") as f:
        f.write(f"sandbox:\n  enabled: {str(enabled).lower()}\n  network: {network}\n")
    return ws


def main():
    *binaries, rounds = sys.argv[1:]
    binaries, rounds = [os.path.abspath(b) for b in binaries], int(rounds)
    root = tempfile.mkdtemp(dir=os.path.join(os.getcwd(), "target"))
    home = os.path.join(root, "home")
    os.makedirs(home)
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "GITHUB_TOKEN": "ghp_bench_secret"}
    spaces = {n: workspace(root, n, *v) for n, v in NETWORKS.items()}
    times = {(b, n): [] for b in binaries for n in NETWORKS}
    for r in range(rounds):
        for name, ws in spaces.items():
            for magus in binaries if r % 2 == 0 else binaries[::-1]:
                start = time.perf_counter()
                subprocess.run([magus, "--workspace", ws, "run", "empty"], env=env, check=True)
                times[(magus, name)].append((time.perf_counter() - start) * 1000)
    for magus in binaries:
        if len(binaries) > 1:
            print(magus)
        stats = {n: (min(times[(magus, n)]), statistics.median(times[(magus, n)])) for n in NETWORKS}
        for name, (low, mid) in stats.items():
            over = "".join(
                f"  +{low - stats[base][0]:5.2f} / +{mid - stats[base][1]:5.2f} over {base}"
                for base in ("off", "on")
                if name not in ("off", base)
            )
            print(f"{name:6} median {mid:6.2f} ms  min {low:6.2f} ms{over}")


if __name__ == "__main__":
    main()
