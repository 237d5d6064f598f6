//! Per-call cost of the interpreter-level gate (DESIGN §11):
//! (a) `Gate::read` of a 1 KiB file in a granted root against a raw
//!     `std::fs::read` of the same file, target ≤ 1.10×;
//! (b) a spell making 10,000 `fs.exists` calls, sandbox on against off,
//!     run in-process through the interpreter and the real bindings,
//!     target ≤ 1.10×;
//! (c) the floor under (b): the one `statx` that `Path::exists` makes,
//!     against the `openat2(RESOLVE_BENEATH)` + `close` the gate must make
//!     (no stat-like system call resolves beneath a root).
//!
//! Run: `cargo bench --bench gate -- --warm-up-time 1 --measurement-time 2`

use criterion::{criterion_group, criterion_main, Criterion};
use magus_sandbox::__private::bindings::{self, Session};
use magus_sandbox::__private::buzz::{self, Interpreter, Program};
use magus_sandbox::__private::enforce::beneath::{Follow, Root};
use magus_sandbox::__private::enforce::gate::Gate;
use magus_sandbox::__private::enforce::landlock::Unavailable;
use magus_sandbox::__private::enforce::Domain;
use magus_sandbox::__private::policy::{self, Policy, SandboxState, StartupInput, WorkspaceArg};
use nix::fcntl::OFlag;
use std::ffi::OsString;
use std::hint::black_box;
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

/// The gate's own work per call (DESIGN §11, ≤ 100 ns above the floor):
/// each gated call beside the system calls it cannot avoid, all in one run,
/// so `gate_* − floor_*` is what the gate itself spends. Timed in thread
/// CPU time (user + system), so other work on a busy machine does not
/// inflate one side more than the other.
fn bench_gate_above_floor(c: &mut Criterion) {
    let fx = Fixture::new();
    let gate = Gate::new(Rc::new(fx.policy(SandboxState::On)), fx.ws.clone());
    let root = Root::open(&fx.ws).expect("the workspace opens as a root");
    let rel = Path::new("data/file.bin");
    let file = fx.file();
    let abs = file.to_string_lossy().into_owned();
    let mut group = c.benchmark_group("above_floor");
    cpu_bench(&mut group, "floor_exists_openat2_close", || {
        root.open_beneath(black_box(rel), OFlag::O_PATH, Follow::BeneathOnly)
            .is_ok()
    });
    cpu_bench(&mut group, "ungated_exists_statx", || {
        black_box(&file).exists()
    });
    cpu_bench(&mut group, "gate_exists_relative", || {
        gate.exists(black_box("data/file.bin")).expect("exists")
    });
    cpu_bench(&mut group, "gate_exists_absolute", || {
        gate.exists(black_box(&abs)).expect("exists")
    });
    cpu_bench(&mut group, "floor_read_openat2_read_close", || {
        let fd = root
            .open_beneath(black_box(rel), OFlag::O_RDONLY, Follow::BeneathOnly)
            .expect("open beneath");
        read_small(fd)
    });
    cpu_bench(&mut group, "ungated_read_std_fs_read", || {
        std::fs::read(black_box(&file)).expect("raw read")
    });
    cpu_bench(&mut group, "gate_read_relative", || {
        gate.read(black_box("data/file.bin")).expect("gated read")
    });
    group.finish();
}

/// Benchmarks `f` in this thread's CPU time.
fn cpu_bench<T>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut f: impl FnMut() -> T,
) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = thread_cpu_time();
            for _ in 0..iters {
                black_box(f());
            }
            thread_cpu_time().saturating_sub(start)
        })
    });
}

fn thread_cpu_time() -> std::time::Duration {
    use nix::time::{clock_gettime, ClockId};
    let now = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    std::time::Duration::new(now.tv_sec() as u64, now.tv_nsec() as u32)
}

/// The read the gate makes for a small file: one read into 8 KiB, one that
/// sees the end.
fn read_small(fd: std::os::fd::OwnedFd) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(8192);
    std::fs::File::from(fd).read_to_end(&mut buf).expect("read");
    buf
}

criterion_group!(
    benches,
    bench_read,
    bench_exists_spell,
    bench_exists_syscalls,
    bench_gate_above_floor
);
criterion_main!(benches);
