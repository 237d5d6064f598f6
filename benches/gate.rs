//! Per-call cost of the interpreter-level gate (docs/benchmarks.md):
//! (a) `Gate::read` of a 1 KiB file in a granted root against a raw
//!     `std::fs::read` of the same file, target ≤ 1.10×;
//! (b) a spell making 10,000 `fs.exists` calls, sandbox on against off,
//!     run in-process through the interpreter and the real bindings,
//!     target ≤ 1.10×;
//! (c) the floor under (b): the one `statx` that `Path::exists` makes,
//!     against the `openat2(RESOLVE_BENEATH)` + `close` the gate must make
//!     (no stat-like system call resolves beneath a root);
//! (d) `above_floor`: the gate's own work per call, each gated call beside
//!     exactly its system calls and the ungated call, with a table of the
//!     differences printed at the end (target ≤ 100 ns);
//! (e) `magus_spell_exists`: the real binary, Landlock on, running spells
//!     of 10,000 and 20,000 `fs.exists`, per call from the difference;
//! (f) `write_1k`: `Gate::write` of 1 KiB over an existing file beside
//!     `std::fs::write` (no target; the gate opens without `O_TRUNC`,
//!     compares the handle's identity with the protected files, then
//!     truncates: docs/protected-names.md).
//!
//! Run: `cargo bench --bench gate -- --warm-up-time 1 --measurement-time 4`

use criterion::{criterion_group, criterion_main, Criterion};
use magus_sandbox::testing::bindings::{self, Session};
use magus_sandbox::testing::buzz::{self, Interpreter, Program};
use magus_sandbox::testing::enforce::beneath::{Follow, Root};
use magus_sandbox::testing::enforce::gate::{Gate, WriteMode};
use magus_sandbox::testing::enforce::landlock::Unavailable;
use magus_sandbox::testing::enforce::Domain;
use magus_sandbox::testing::policy::{self, Policy, SandboxState, StartupInput, WorkspaceArg};
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use std::ffi::{CStr, OsString};
use std::hint::black_box;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A workspace (and a home beside it) under the target directory, with a
/// 1 KiB file at `data/file.bin`.
struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("magus-bench-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("bench directory");
        let root = dir.path().canonicalize().expect("canonical bench root");
        let (ws, home) = (root.join("ws"), root.join("home"));
        std::fs::create_dir_all(ws.join("data")).expect("workspace");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(ws.join("data/file.bin"), vec![b'x'; 1024]).expect("1 KiB file");
        Fixture {
            _dir: dir,
            ws,
            home,
        }
    }

    /// The policy `magus run` would resolve for this workspace.
    fn policy(&self, state: SandboxState) -> Policy {
        let enabled = matches!(state, SandboxState::On);
        std::fs::write(
            self.ws.join("magus.yaml"),
            format!("sandbox:\n  enabled: {enabled}\n"),
        )
        .expect("magus.yaml");
        let env: Vec<(OsString, OsString)> = vec![
            ("HOME".into(), self.home.clone().into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ];
        let startup = policy::startup(StartupInput {
            workspace: WorkspaceArg::Explicit(&self.ws),
            env: &env,
            spell: None,
        })
        .expect("the bench policy resolves");
        assert_eq!(startup.policy.state(), state);
        startup.policy
    }

    fn file(&self) -> PathBuf {
        self.ws.join("data/file.bin")
    }
}

fn bench_read(c: &mut Criterion) {
    let fx = Fixture::new();
    let gate = Gate::new(Rc::new(fx.policy(SandboxState::On)), fx.ws.clone());
    let file = fx.file();
    let spelled = file.to_string_lossy().into_owned();
    assert_eq!(gate.read(&spelled).expect("gated read").len(), 1024);
    let mut group = c.benchmark_group("read_1k");
    group.bench_function("raw_std_fs_read", |b| {
        b.iter(|| std::fs::read(black_box(&file)).expect("raw read"))
    });
    group.bench_function("gate_read", |b| {
        b.iter(|| gate.read(black_box(&spelled)).expect("gated read"))
    });
    group.bench_function("gate_read_relative", |b| {
        b.iter(|| gate.read(black_box("data/file.bin")).expect("gated read"))
    });
    group.finish();
}

/// `fs.write` of 1 KiB over an existing file, gated and not, in thread
/// CPU time; the medians and their difference printed at the end.
fn bench_write(c: &mut Criterion) {
    let fx = Fixture::new();
    let gate = Gate::new(Rc::new(fx.policy(SandboxState::On)), fx.ws.clone());
    let data = vec![b'y'; 1024];
    let out = fx.ws.join("data/out.bin");
    std::fs::write(&out, &data).expect("the file written over");
    let mut group = c.benchmark_group("write_1k");
    group.sample_size(SAMPLES);
    let mut medians = Medians::default();
    medians.bench(&mut group, "ungated_write_std_fs_write", || {
        std::fs::write(black_box(&out), &data).expect("write")
    });
    medians.bench(&mut group, "gate_write_relative", || {
        let spelled = black_box("data/out.bin");
        gate.write(spelled, &data, WriteMode::Truncate)
            .expect("gated write")
    });
    group.finish();
    let ungated = medians.get("ungated_write_std_fs_write");
    let gated = medians.get("gate_write_relative");
    if let (Some(ungated), Some(gated)) = (ungated, gated) {
        println!(
            "\nwrite_1k, thread CPU ns per call (medians): ungated {ungated:.0}, \
             gated {gated:.0}, gated - ungated {:.0}",
            gated - ungated
        );
    }
}

/// A session built as `magus run` builds it, minus Landlock (which would
/// confine the bench process itself): the gate is the thing measured.
fn session(policy: Policy, ws: &Path) -> Rc<Session> {
    let env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let gate = Gate::new(Rc::new(policy), ws.to_path_buf());
    let sink: bindings::DiagnosticSink = Rc::new(|_| {});
    let domain = Domain::unconfined(Unavailable::ForcedOff);
    Rc::new(Session::new(gate, domain, env, Vec::new(), sink))
}

fn exists_spell(file: &Path) -> String {
    format!(
        "import \"fs\";\n\nfun main(args: [str]) > int {{\n    var found = 0;\n    foreach (i in 0..10000) {{\n        if (fs.exists(\"{}\")) {{ found = found + 1; }}\n    }}\n    return found;\n}}\n",
        file.display()
    )
}

fn run_spell(session: &Rc<Session>, file: &Path, program: &Program) -> i32 {
    let mut interpreter = Interpreter::new(file, bindings::modules(session));
    interpreter
        .run(program, Vec::new())
        .expect("the spell runs")
}

fn bench_exists_spell(c: &mut Criterion) {
    let fx = Fixture::new();
    let spell_file = fx.ws.join("exists.buzz");
    let source = exists_spell(&fx.file());
    let program = buzz::parse(&spell_file, &source).expect("the spell parses");
    let mut group = c.benchmark_group("spell_10k_exists");
    group.sample_size(20);
    for (name, state) in [
        ("sandbox_off", SandboxState::Off),
        ("sandbox_on", SandboxState::On),
    ] {
        let session = session(fx.policy(state), &fx.ws);
        assert_eq!(run_spell(&session, &spell_file, &program), 10_000);
        group.bench_function(name, |b| {
            b.iter(|| run_spell(&session, &spell_file, black_box(&program)))
        });
    }
    group.finish();
}

fn bench_exists_syscalls(c: &mut Criterion) {
    let fx = Fixture::new();
    let file = fx.file();
    let root = Root::open(&fx.ws).expect("the workspace opens as a root");
    let rel = Path::new("data/file.bin");
    let mut group = c.benchmark_group("exists_syscalls");
    group.bench_function("statx", |b| b.iter(|| black_box(&file).exists()));
    group.bench_function("openat2_beneath_close", |b| {
        b.iter(|| {
            root.open_beneath(black_box(rel), OFlag::O_PATH, Follow::BeneathOnly)
                .is_ok()
        })
    });
    group.finish();
}

/// The gate's own work per call (docs/benchmarks.md, ≤ 100 ns above the floor):
/// each gated call beside exactly the system calls it makes (the floor,
/// with the path already NUL-terminated, so no user-space work but the
/// calls) and beside the unsandboxed call, all in one run, so
/// `gate_* − floor_*` is what the gate itself spends. Timed in thread CPU
/// time (user + system), so other work on a busy machine does not inflate
/// one side more than the other. The medians and the differences are
/// printed as a table at the end of the group.
fn bench_gate_above_floor(c: &mut Criterion) {
    let fx = Fixture::new();
    let gate = Gate::new(Rc::new(fx.policy(SandboxState::On)), fx.ws.clone());
    let root = Root::open(&fx.ws).expect("the workspace opens as a root");
    let rel = c"data/file.bin";
    let file = fx.file();
    let abs = file.to_string_lossy().into_owned();
    let mut group = c.benchmark_group("above_floor");
    group.sample_size(SAMPLES);
    let mut medians = Medians::default();
    medians.bench(&mut group, "floor_exists_openat2_close", || {
        floor_open(&root, rel, OFlag::O_PATH).is_ok()
    });
    medians.bench(&mut group, "ungated_exists_statx", || {
        black_box(&file).exists()
    });
    medians.bench(&mut group, "gate_exists_relative", || {
        gate.exists(black_box("data/file.bin")).expect("exists")
    });
    medians.bench(&mut group, "gate_exists_absolute", || {
        gate.exists(black_box(&abs)).expect("exists")
    });
    medians.bench(&mut group, "floor_read_openat2_read_read_close", || {
        let fd = floor_open(&root, rel, OFlag::O_RDONLY).expect("openat2");
        read_as_the_gate_does(fd)
    });
    medians.bench(&mut group, "ungated_read_std_fs_read", || {
        std::fs::read(black_box(&file)).expect("raw read")
    });
    medians.bench(&mut group, "gate_read_relative", || {
        gate.read(black_box("data/file.bin")).expect("gated read")
    });
    group.finish();
    if medians.medians.is_empty() {
        return;
    }
    let exists = || gate.exists(black_box("data/file.bin")).expect("exists");
    let floor_exists = || floor_open(&root, rel, OFlag::O_PATH).is_ok();
    let read = || gate.read(black_box("data/file.bin")).expect("gated read");
    let floor_read =
        || read_as_the_gate_does(floor_open(&root, rel, OFlag::O_RDONLY).expect("openat2"));
    medians
        .paired
        .push(("exists (relative)", paired_difference(floor_exists, exists)));
    medians
        .paired
        .push(("read 1 KiB (relative)", paired_difference(floor_read, read)));
    medians.report();
}

/// The gate's own work per call, paired: the floor and the gated call are
/// timed in alternating blocks (in either order, by turns), so a change in
/// the machine's load between them cancels out. The median over blocks of
/// (gated − floor) per call, in thread CPU nanoseconds.
fn paired_difference<A, B>(mut floor: impl FnMut() -> A, mut gated: impl FnMut() -> B) -> f64 {
    const BLOCKS: usize = 300;
    const CALLS: u32 = 400;
    let mut time = |first_floor: bool| {
        let mut spent = [0.0; 2];
        for (at, is_floor) in [(0, first_floor), (1, !first_floor)] {
            let start = thread_cpu_time();
            for _ in 0..CALLS {
                if is_floor {
                    black_box(floor());
                } else {
                    black_box(gated());
                }
            }
            spent[at] = thread_cpu_time().saturating_sub(start).as_nanos() as f64;
        }
        match first_floor {
            true => spent[1] - spent[0],
            false => spent[0] - spent[1],
        }
    };
    let mut differences: Vec<f64> = (0..BLOCKS)
        .map(|block| time(block % 2 == 0) / f64::from(CALLS))
        .collect();
    median_of_last(&mut differences, BLOCKS).unwrap_or(f64::NAN)
}

/// Samples per benchmark in `above_floor`; each median is taken over the
/// last this many (criterion's measurement, after its warm-up).
const SAMPLES: usize = 50;

/// The medians of `above_floor`, in nanoseconds per call, by name.
#[derive(Default)]
struct Medians {
    medians: Vec<(&'static str, f64)>,
    /// (gated − floor) per call from [`paired_difference`], by row.
    paired: Vec<(&'static str, f64)>,
}

impl Medians {
    /// Benchmarks `f` in this thread's CPU time and keeps its median.
    fn bench<T>(
        &mut self,
        group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        name: &'static str,
        mut f: impl FnMut() -> T,
    ) {
        let mut per_call: Vec<f64> = Vec::new();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = thread_cpu_time();
                for _ in 0..iters {
                    black_box(f());
                }
                let spent = thread_cpu_time().saturating_sub(start);
                per_call.push(spent.as_nanos() as f64 / iters.max(1) as f64);
                spent
            })
        });
        if let Some(median) = median_of_last(&mut per_call, SAMPLES) {
            self.medians.push((name, median));
        }
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.medians
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
    }

    /// Per call: the floor, the gated call, the ungated one, and the
    /// gate's own work above the floor.
    fn report(&self) {
        let rows = [
            (
                "exists (relative)",
                "floor_exists_openat2_close",
                "gate_exists_relative",
                "ungated_exists_statx",
            ),
            (
                "exists (absolute)",
                "floor_exists_openat2_close",
                "gate_exists_absolute",
                "ungated_exists_statx",
            ),
            (
                "read 1 KiB (relative)",
                "floor_read_openat2_read_read_close",
                "gate_read_relative",
                "ungated_read_std_fs_read",
            ),
        ];
        println!("\nabove_floor, thread CPU ns per call (medians):");
        println!(
            "{:<24}{:>8}{:>8}{:>8}{:>14}{:>14}",
            "call", "floor", "gated", "ungated", "gate - floor", "paired"
        );
        for (what, floor, gated, ungated) in rows {
            let (Some(floor), Some(gated), Some(ungated)) =
                (self.get(floor), self.get(gated), self.get(ungated))
            else {
                continue;
            };
            let paired = self.paired.iter().find(|(row, _)| *row == what);
            let paired = paired.map_or("-".to_string(), |(_, d)| format!("{d:.0}"));
            println!(
                "{what:<24}{floor:>8.0}{gated:>8.0}{ungated:>8.0}{:>14.0}{paired:>14}",
                gated - floor
            );
        }
        for (what, d) in &self.paired {
            println!("paired {what}: {d:.0}");
        }
    }
}

/// The median of the last `n` values (all of them when fewer).
fn median_of_last(values: &mut [f64], n: usize) -> Option<f64> {
    let from = values.len().saturating_sub(n);
    let last = &mut values[from..];
    last.sort_by(f64::total_cmp);
    last.get(last.len() / 2).copied()
}

/// The one `openat2` the gate makes for a granted relative path, as the
/// gate makes it (`RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, close-on-exec),
/// from a path that is already a C string: nothing but the system call.
fn floor_open(root: &Root, rel: &CStr, flags: OFlag) -> nix::Result<OwnedFd> {
    let how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    nix::fcntl::openat2(root.fd(), black_box(rel), how)
}

fn thread_cpu_time() -> std::time::Duration {
    use nix::time::{clock_gettime, ClockId};
    let now = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    std::time::Duration::new(now.tv_sec() as u64, now.tv_nsec() as u32)
}

/// The reads the gate makes for a small file (`read_all` in the gate):
/// one into an 8 KiB buffer, one that sees the end, then the close.
fn read_as_the_gate_does(fd: OwnedFd) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(8192);
    std::fs::File::from(fd)
        .take(8192)
        .read_to_end(&mut buf)
        .expect("read");
    buf
}

/// What a user pays: the real `magus` binary (re-exec, jail, seccomp,
/// Landlock when the kernel has it) running a spell of 10,000 and of
/// 20,000 `fs.exists` of a relative path, sandbox on and off. The
/// difference between the two counts is the cost of 10,000 calls with
/// start-up cancelled out; timed in the CPU time of the magus processes
/// (user + system of every waited-for descendant), printed per call.
fn bench_spell_through_magus(c: &mut Criterion) {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.ws.join("spells")).expect("spells");
    for count in COUNTS {
        let spell = exists_spell_relative(count);
        std::fs::write(fx.ws.join(format!("spells/exists{count}.buzz")), spell).expect("spell");
    }
    let mut group = c.benchmark_group("magus_spell_exists");
    group.sample_size(10);
    let mut per_run = Vec::new();
    for (state, enabled) in [("sandbox_off", false), ("sandbox_on", true)] {
        std::fs::write(
            fx.ws.join("magus.yaml"),
            format!("sandbox:\n  enabled: {enabled}\n"),
        )
        .expect("magus.yaml");
        for count in COUNTS {
            let mut samples = Vec::new();
            group.bench_function(format!("{state}_{count}"), |b| {
                b.iter_custom(|iters| {
                    let start = children_cpu_time();
                    for _ in 0..iters {
                        run_magus(&fx, count);
                    }
                    let spent = children_cpu_time().saturating_sub(start);
                    samples.push(spent.as_nanos() as f64 / iters.max(1) as f64);
                    spent
                })
            });
            per_run.push((state, count, median_of_last(&mut samples, 10)));
        }
    }
    group.finish();
    if per_run.iter().all(|(_, _, median)| median.is_none()) {
        return;
    }
    println!("\nmagus_spell_exists, CPU ns per fs.exists call ((20k run - 10k run) / 10k):");
    for state in ["sandbox_off", "sandbox_on"] {
        let at = |n| {
            per_run
                .iter()
                .find(|(s, c, _)| *s == state && *c == n)
                .and_then(|r| r.2)
        };
        if let (Some(short), Some(long)) = (at(COUNTS[0]), at(COUNTS[1])) {
            let calls = (COUNTS[1] - COUNTS[0]) as f64;
            println!("{state:<12}{:>10.0}", (long - short) / calls);
        }
    }
}

/// The two spell lengths of [`bench_spell_through_magus`].
const COUNTS: [u32; 2] = [10_000, 20_000];

fn exists_spell_relative(count: u32) -> String {
    format!(
        "import \"fs\";\n\nfun main(args: [str]) > int {{\n    var found = 0;\n    foreach (i in 0..{count}) {{\n        if (fs.exists(\"data/file.bin\")) {{ found = found + 1; }}\n    }}\n    if (found == {count}) {{ return 0; }}\n    return 1;\n}}\n"
    )
}

fn run_magus(fx: &Fixture, count: u32) {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_magus"))
        .current_dir(&fx.ws)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &fx.home)
        // Named: a fixture under this repository's own (sandboxed)
        // workspace whose sandbox is off is refused by discovery.
        .arg("--workspace")
        .arg(&fx.ws)
        .args(["run", &format!("exists{count}")])
        .status()
        .expect("magus runs");
    assert!(status.success(), "magus run exists{count} failed: {status}");
}

fn children_cpu_time() -> std::time::Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("rusage of children");
    let micros = |t: nix::sys::time::TimeVal| {
        std::time::Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
    };
    micros(usage.user_time()) + micros(usage.system_time())
}

criterion_group!(
    benches,
    bench_read,
    bench_exists_spell,
    bench_exists_syscalls,
    bench_gate_above_floor,
    bench_write,
    bench_spell_through_magus
);
criterion_main!(benches);
