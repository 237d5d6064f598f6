#!/usr/bin/env python3
"""`magus run` of an empty spell in four workspaces (sandbox off, on,
`network: deny`, `network.hosts`), run in turn N times, so load from other
work on a shared machine falls on all four alike; prints the median and
the minimum of each. The same workspaces as benches/run.rs.

    cargo build --release --bin magus
    python3 scripts/startup-alternating.py target/release/magus 100
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
    magus, rounds = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    root = tempfile.mkdtemp(dir=os.path.join(os.getcwd(), "target"))
    home = os.path.join(root, "home")
    os.makedirs(home)
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "GITHUB_TOKEN": "ghp_bench_secret"}
    spaces = {n: workspace(root, n, *v) for n, v in NETWORKS.items()}
    times = {n: [] for n in NETWORKS}
    for _ in range(rounds):
        for name, ws in spaces.items():
            start = time.perf_counter()
            subprocess.run([magus, "--workspace", ws, "run", "empty"], env=env, check=True)
            times[name].append((time.perf_counter() - start) * 1000)
    for name, t in times.items():
        print(f"{name:6} median {statistics.median(t):6.2f} ms  min {min(t):6.2f} ms")


if __name__ == "__main__":
    main()
