#!/usr/bin/env python3
"""magus's Buzz interpreter against CPython, side by side.

Runs each Buzz program with `magus run` and its Python equivalent with
`python3`, checks that both print the same bytes and exit 0, and times them
interleaved (magus, python, magus, python, ...) so that load from other
work falls on both alike. Two sets:

  interp     the three programs of benches/interp.rs (benches/programs/*.buzz)
             beside their Python equivalents (benches/programs/*.py);
             target: each at most half python3's time;
  upstream   upstream Buzz's tests/bench programs, read from upstream's
             checkout (never copied into this repository), beside our own
             Python ports (benches/programs/upstream/*.py);
             target: each no slower than python3, and the geometric
             mean of the ratios at most 0.5.

It builds nothing:

    cargo build --release --bin magus
    python3 benches/compare.py /path/to/buzz/tests/bench [--runs 5]

magus runs each program as a user would: from the `spells/` of a
throw-away workspace under $HOME (outside this repository), with the
sandbox on and the default policy (`magus.yaml`: `sandbox: enabled: true`),
`magus --workspace WS run NAME ARGS...`. python3 is the interpreter that
`python3` on PATH resolves to (its `sys.executable`, so that a version
manager's shim costs nothing per run).

Times are wall time, spawn to exit (`--clock cpu`: user + system CPU time
of the process and its waited-for children, steadier on a loaded machine).
`--rss` measures peak resident memory instead (the maximum resident set
size of the run's largest process, read by GNU time; the largest of the
runs), against
the target that no program needs more than its port does under python3.
`--callgrind` instead counts instructions under `valgrind --tool=callgrind`
(one run each, every process of the run summed; magus with the sandbox off:
valgrind does not start inside it, its loader's fixed-address `mmap` is
refused there), which the machine's load does not move. It is so much
slower (the three interp programs: about 6 minutes on the project's loaded
machine; the upstream set: hours) that it is meant for a few programs at a
time (`--only fib,for`).

Exit status: 0 when every pair printed the same and exited 0, 1 when any
output differed or a run failed, 2 on bad arguments.
"""

import argparse
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
GNU_TIME = "/usr/bin/time"
PROGRAMS = os.path.join(HERE, "programs")
PORTS = os.path.join(PROGRAMS, "upstream")


@dataclass
class Program:
    """One Buzz program and its Python equivalent."""

    set: str  # "interp" or "upstream"
    name: str  # the spell's name, and the Python file's
    args: list = field(default_factory=list)
    stdin: str = None  # "fasta": the input made by fasta's port (see below)

    @property
    def label(self):
        return f"{self.set}/{self.name}"

    def python_file(self):
        folder = PROGRAMS if self.set == "interp" else PORTS
        return os.path.join(folder, self.name + ".py")

    def buzz_file(self, upstream_dir):
        if self.set == "interp":
            return os.path.join(PROGRAMS, self.name + ".buzz")
        return os.path.join(upstream_dir, self.name + ".buzz")


# Sizes: upstream publishes no arguments of its own, only its programs'
# defaults, mostly too small to time; each size here has python3 take
# 0.1-0.5 s of CPU on the project's machine (fib and for take none).
PROGRAM_LIST = [
    Program("interp", "while_additions"),
    Program("interp", "method_calls"),
    Program("interp", "string_join"),
    Program("upstream", "ackermann", ["3", "8"]),  # upstream's default
    Program("upstream", "btree", ["13"]),  # default 3 (depth 6)
    Program("upstream", "bubble-sort", ["1500"]),  # default 750
    Program("upstream", "fasta", ["50000"]),  # default 1000
    Program("upstream", "fib"),  # fib(30), no arguments
    Program("upstream", "for"),  # 1,000,000 items, no arguments
    Program("upstream", "grid", ["1000", "500"]),  # default 80 60
    Program("upstream", "k-nucleoide", stdin="fasta"),
    Program("upstream", "merkle", ["12"]),  # default 6
    Program("upstream", "nbody", ["50000"]),  # default 1000
    Program("upstream", "spectral", ["200"]),  # default 100
]

# k-nucleoide reads a FASTA file on stdin; upstream feeds it fasta's output.
# Ours is fasta's port's output at this size without its empty lines
# (Buzz's fasta prints one after each buffer it flushes; the reference input
# upstream keeps, the Lua program's output, has none, and k-nucleoide's
# `line?[0]` has no first byte to read on an empty line).
KNUCLEOTIDE_FASTA_SIZE = "25000"


class Failure(Exception):
    """A run that did not exit 0."""


@dataclass
class Outcome:
    magus: list = field(default_factory=list)  # seconds, or instructions
    python: list = field(default_factory=list)
    mismatch: str = None  # why the outputs differ, if they do
    failure: str = None  # why a run failed, if one did


def main():
    options = parse_options()
    python = resolve_python(options.python)
    magus = os.path.abspath(options.magus)
    if not os.access(magus, os.X_OK):
        usage_error(f"no magus binary at {magus}: run `cargo build --release --bin magus` first")
    programs = select(options.only, options.upstream_dir)
    root = tempfile.mkdtemp(prefix=".magus-compare.", dir=os.path.expanduser("~"))
    try:
        sandbox = "off" if options.callgrind else options.sandbox
        workspace = make_workspace(root, programs, options.upstream_dir, sandbox)
        # No `__pycache__` beside the ports in the repository: buzz_std.py,
        # the one module of ours they import, is compiled at each run (well
        # under a millisecond).
        python_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        inputs = make_inputs(root, programs, python, python_env)
        print_header(options, magus, python, sandbox)
        runner = Runner(options, (magus, workspace), (python, python_env), inputs)
        outcomes = {}
        for program in programs:
            outcomes[program.label] = runner.compare(program)
            print_row(program, outcomes[program.label], options)
        return print_summary(programs, outcomes, options)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def parse_options():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    parser.add_argument("upstream_dir", help="upstream Buzz's tests/bench directory")
    parser.add_argument("--magus", default=os.path.join(HERE, "..", "target", "release", "magus"))
    parser.add_argument("--python", default="python3", help="the python3 to compare with")
    parser.add_argument("--runs", type=int, default=5, help="runs of each side (default 5)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--sandbox", choices=["on", "off"], default="on")
    parser.add_argument("--callgrind", action="store_true", help="count instructions instead")
    parser.add_argument(
        "--rss", action="store_true", help="peak resident memory instead (MiB, the largest run)"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated names or sets (interp, upstream) to run"
    )
    options = parser.parse_args()
    if options.runs < 1:
        usage_error("--runs must be at least 1")
    if options.callgrind and options.rss:
        usage_error("--callgrind and --rss measure different things: give one")
    if options.rss and not os.access(GNU_TIME, os.X_OK):
        usage_error(f"--rss needs GNU time at {GNU_TIME} (Debian: apt install time)")
    if options.callgrind and shutil.which("valgrind") is None:
        usage_error("--callgrind needs valgrind on PATH")
    return options


def usage_error(message):
    print(f"compare.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def resolve_python(command):
    """The interpreter `command` runs, not a shim in front of it."""
    try:
        out = subprocess.run(
            [command, "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        usage_error(f"cannot run {command}: {error}")
    return out.stdout.strip()


def select(only, upstream_dir):
    wanted = [w for w in only.split(",") if w]
    known = {p.name for p in PROGRAM_LIST} | {"interp", "upstream"}
    for name in wanted:
        if name not in known:
            usage_error(f"--only: no program or set named {name!r}")
    programs = [
        p for p in PROGRAM_LIST if not wanted or p.name in wanted or p.set in wanted
    ]
    if any(p.set == "upstream" for p in programs) and not os.path.isdir(upstream_dir):
        usage_error(f"{upstream_dir}: not a directory (upstream Buzz's tests/bench)")
    for program in programs:
        for path in (program.buzz_file(upstream_dir), program.python_file()):
            if not os.path.isfile(path):
                usage_error(f"{program.label}: {path} not found")
    return programs


def make_workspace(root, programs, upstream_dir, sandbox):
    workspace = os.path.join(root, "workspace")
    os.makedirs(os.path.join(workspace, "spells"))
    with open(os.path.join(workspace, "magus.yaml"), "w") as f:
        f.write(f"sandbox:\n  enabled: {'true' if sandbox == 'on' else 'false'}\n")
    for program in programs:
        shutil.copy(
            program.buzz_file(upstream_dir),
            os.path.join(workspace, "spells", program.name + ".buzz"),
        )
    return workspace


def make_inputs(root, programs, python, python_env):
    """The files programs read on stdin, by name."""
    inputs = {}
    if any(p.stdin == "fasta" for p in programs):
        fasta = os.path.join(PORTS, "fasta.py")
        out = subprocess.run(
            [python, fasta, KNUCLEOTIDE_FASTA_SIZE],
            capture_output=True,
            check=True,
            env=python_env,
        ).stdout
        path = os.path.join(root, "knucleotide-input.txt")
        with open(path, "wb") as f:
            f.write(b"".join(line for line in out.splitlines(True) if line != b"\n"))
        inputs["fasta"] = path
    return inputs


class Runner:
    """Runs one program's pair and measures it."""

    def __init__(self, options, magus, python, inputs):
        self.options = options
        self.magus, self.workspace = magus
        self.python, self.python_env = python
        self.inputs = inputs

    def commands(self, program):
        magus = [self.magus, "--workspace", self.workspace, "run", program.name]
        python = [self.python, program.python_file()]
        return magus + program.args, python + program.args

    def compare(self, program):
        outcome = Outcome()
        magus, python = self.commands(program)
        rounds = 1 if self.options.callgrind else self.options.runs
        outputs = {}
        try:
            for _ in range(rounds):
                for side, command, env in (
                    ("magus", magus, None),
                    ("python", python, self.python_env),
                ):
                    measure, output = self.run(command, program, env)
                    getattr(outcome, side).append(measure)
                    outputs.setdefault(side, output)
                    if output != outputs[side]:
                        outcome.mismatch = f"{side} printed something else on another run"
        except Failure as failure:
            outcome.failure = str(failure)
            return outcome
        if outcome.mismatch is None and outputs["magus"] != outputs["python"]:
            outcome.mismatch = first_difference(outputs["magus"], outputs["python"])
        return outcome

    def run(self, command, program, env):
        if self.options.callgrind:
            return self.run_callgrind(command, program, env)
        if self.options.rss:
            return self.run_rss(command, program, env)
        stdin = self.open_stdin(program)
        before = children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            command, stdin=stdin, capture_output=True, cwd=self.workspace, env=env
        )
        wall = time.perf_counter() - start
        cpu = children_cpu() - before
        stdin.close()
        check_status(command, done)
        return (cpu if self.options.clock == "cpu" else wall), done.stdout

    def run_rss(self, command, program, env):
        """Peak resident set size in bytes of the run's largest process
        (magus's jail and interpreter included), as GNU time reads it from
        `wait4`. Not `wait4` here: a child forked from this Python process
        starts with its memory, and the kernel keeps that high-water mark
        across `execve`."""
        stdin = self.open_stdin(program)
        with tempfile.NamedTemporaryFile() as peak:
            done = subprocess.run(
                [GNU_TIME, "--format=%M", f"--output={peak.name}", *command],
                stdin=stdin,
                capture_output=True,
                cwd=self.workspace,
                env=env,
            )
            stdin.close()
            check_status(command, done)
            kib = int(peak.read().split()[-1])
        return kib * 1024, done.stdout

    def run_callgrind(self, command, program, env):
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            "--callgrind-out-file=/dev/null",
        ]
        stdin = self.open_stdin(program)
        done = subprocess.run(
            valgrind + command, stdin=stdin, capture_output=True, cwd=self.workspace, env=env
        )
        stdin.close()
        check_status(command, done)
        counts = re.findall(rb"^==\d+== Collected : (\d+)", done.stderr, re.M)
        if not counts:
            raise Failure(f"{command[0]}: valgrind reported no instruction count")
        return sum(int(c) for c in counts), done.stdout

    def open_stdin(self, program):
        if program.stdin is None:
            return open(os.devnull, "rb")
        return open(self.inputs[program.stdin], "rb")


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check_status(command, done):
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip().splitlines()
        last = stderr[-1] if stderr else "(nothing on stderr)"
        raise Failure(f"{os.path.basename(command[0])} exited {done.returncode}: {last}")


def first_difference(magus, python):
    """Where two outputs part, in a line fit for the table."""
    a, b = magus.splitlines(), python.splitlines()
    for number, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            x, y = (t[:60].decode(errors="replace") for t in (x, y))
            return f"line {number}: magus {x!r}, python {y!r}"
    if len(a) != len(b):
        return f"magus printed {len(a)} lines, python {len(b)}"
    return "the outputs differ in their line endings"


def print_header(options, magus, python, sandbox):
    version = subprocess.run([python, "--version"], capture_output=True, text=True).stdout
    if options.callgrind:
        what = "instructions (valgrind --tool=callgrind)"
    elif options.rss:
        what = f"peak resident memory, the largest of {options.runs} interleaved runs"
    else:
        what = f"{options.clock} time, median of {options.runs} interleaved runs"
    print(f"magus:  {magus} (sandbox {sandbox})")
    print(f"python: {python} ({version.strip()})")
    print(f"{what}; load average {load_average()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    unit = "M instr" if options.callgrind else "MiB" if options.rss else "ms"
    print(f"{'program':28} {'args':12} {'magus ' + unit:>15} {'python ' + unit:>15} {'ratio':>7}")


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_row(program, outcome, options):
    args = " ".join(program.args) or ("< fasta" if program.stdin else "")
    head = f"{program.label:28} {args:12}"
    if outcome.failure:
        print(f"{head} FAILED: {outcome.failure}")
        return
    magus, python = median(outcome.magus, options), median(outcome.python, options)
    line = f"{head} {magus:15.1f} {python:15.1f} {magus / python:7.2f}"
    if outcome.mismatch:
        line += f"  OUTPUT DIFFERS: {outcome.mismatch}"
    print(line)


def median(values, options):
    """In the table's unit: milliseconds, millions of instructions, or (the
    largest, not the median: a peak is what a budget must hold) MiB."""
    if options.rss:
        return max(values) / (1 << 20)
    scale = 1e-6 if options.callgrind else 1e3
    return statistics.median(values) * scale


def ratio(outcome, options):
    if options.rss:
        return max(outcome.magus) / max(outcome.python)
    return statistics.median(outcome.magus) / statistics.median(outcome.python)


def print_summary(programs, outcomes, options):
    good = {
        p.label: outcomes[p.label]
        for p in programs
        if not outcomes[p.label].failure and not outcomes[p.label].mismatch
    }
    bad = [p.label for p in programs if p.label not in good]
    print()
    if options.rss:
        higher = [label for label, o in good.items() if ratio(o, options) > 1.0]
        verdict = "met" if not higher and not bad else "missed (" + ", ".join(higher + bad) + ")"
        print(f"peak resident memory no higher than python3's on each: {verdict}")
    else:
        print_speed_verdicts(programs, good, options)
    if bad:
        print("failed or differing: " + ", ".join(bad))
        return 1
    return 0


def print_speed_verdicts(programs, good, options):
    """The speed targets: each micro program (interp) at most 0.5x python3;
    each upstream program at most 1.0x, their geometric mean at most 0.5x."""
    interp = [p for p in programs if p.set == "interp"]
    if interp:
        slower = [
            p.name for p in interp if p.label not in good or ratio(good[p.label], options) > 0.5
        ]
        verdict = "met" if not slower else "missed (" + ", ".join(slower) + ")"
        print(f"interp: each at most half python3's (ratio <= 0.50): {verdict}")
    upstream = [p for p in programs if p.set == "upstream"]
    ratios = [ratio(good[p.label], options) for p in upstream if p.label in good]
    if ratios:
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        over = [p.name for p in upstream if p.label in good and ratio(good[p.label], options) > 1.0]
        complete = len(ratios) == len(upstream)
        each = "met" if not over else "missed (" + ", ".join(over) + ")"
        verdict = ("met" if mean <= 0.5 else "missed") if complete else "not settled"
        print(f"upstream: each at most python3's (ratio <= 1.00): {each}")
        print(
            f"upstream: geometric mean of {len(ratios)} of {len(upstream)} ratios "
            f"{mean:.2f} (target <= 0.50: {verdict}; upstream Buzz's JIT: about 0.37)"
        )


if __name__ == "__main__":
    sys.exit(main())
