//! Child spawn cost (docs/benchmarks.md, target ≤ 1.15×): `/bin/true` started with
//! an env scrub and a nested Landlock domain (`ConfinedCommand`, a
//! vfork-style clone) against a plain `std::process::Command` (std's
//! `posix_spawn` path), both from the same process in the same run.
//!
//! A nested domain needs a domain to nest in, so the bench process first
//! restricts itself, as magus does at startup, with a policy shaped like the
//! default one (system ro, the package dir and /tmp rw) and the terminal
//! guard. Criterion runs this bench as a process of its own, so no test
//! runner is affected; every variant runs under the same restriction, so
//! the ratio isolates the per-spawn work (env scrub, one `dup`, the stack
//! mapping, the signal reset and `landlock_restrict_self` in the child).
//! Two more variants for reading the figures: std with the same scrubbed
//! environment (the launch alone), and std with an empty `pre_exec`, which
//! shows what the fork path that `pre_exec` forces would cost.
//!
//! Run: `cargo bench --bench spawn -- --warm-up-time 2 --measurement-time 8`

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::Criterion;
use magus_sandbox::testing::enforce::{
    install_on_self, ChildStdio, ConfinedCommand, Domain, LandlockRequest, SyscallGuard,
};
use magus_sandbox::testing::policy::{Grant, GrantSource, Mode, Network};

fn grant(path: &Path, mode: Mode) -> Grant {
    Grant {
        path: path.to_path_buf(),
        mode,
        source: GrantSource::Builtin("bench"),
    }
}

fn bench_policy() -> Vec<Grant> {
    const RO: [&str; 13] = [
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/opt",
        "/etc",
        "/proc",
        "/sys",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
    ];
    const RW: [&str; 5] = ["/tmp", "/dev/null", "/dev/tty", "/dev/pts", "/dev/shm"];
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let present = |paths: &'static [&'static str], mode| {
        paths
            .iter()
            .map(Path::new)
            .filter(|p| p.exists())
            .map(move |p| grant(p, mode))
    };
    present(&RO, Mode::Ro)
        .chain(present(&RW, Mode::Rw))
        .chain([grant(&package, Mode::Rw)])
        .collect()
}

/// The child environment the policy's allowlist gives (docs/configuration.md).
fn scrubbed_env() -> Vec<(OsString, OsString)> {
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    magus_sandbox::testing::policy::ChildEnv::build(&vars, &[]).vars
}

fn confine_self() -> Domain {
    let guard = SyscallGuard::build(
        magus_sandbox::testing::enforce::seccomp::GuardMode::Jailed,
        magus_sandbox::testing::enforce::network::NetworkSeccomp::None,
    )
    .expect("seccomp filter builds");
    guard.install_on_self().expect("seccomp filter installs");
    let domain = install_on_self(&bench_policy(), &Network::Allow, LandlockRequest::Enforce)
        .expect("landlock installs");
    eprintln!("bench process: {:?}", domain.status());
    domain
}

fn main() {
    let domain = confine_self();
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("spawn /bin/true");
    group.bench_function("plain std Command", |b| {
        b.iter(|| Command::new("/bin/true").status().expect("spawn"))
    });
    // The same environment as the confined variant, to separate the cost
    // of the launch from that of the environment's size.
    group.bench_function("plain std Command, scrubbed env", |b| {
        b.iter(|| {
            Command::new("/bin/true")
                .env_clear()
                .envs(scrubbed_env())
                .status()
                .expect("spawn")
        })
    });
    group.bench_function("confined: env scrub + nested domain", |b| {
        b.iter(|| {
            ConfinedCommand::new("/bin/true")
                .env(scrubbed_env())
                .stdio(
                    ChildStdio::Inherit,
                    ChildStdio::Inherit,
                    ChildStdio::Inherit,
                )
                .spawn(&domain)
                .expect("spawn")
                .wait()
                .expect("wait")
        })
    });
    // Breakdown: the fork path `pre_exec` forces, with nothing in it.
    group.bench_function("std Command + empty pre_exec", |b| {
        b.iter(|| {
            let mut cmd = Command::new("/bin/true");
            // SAFETY: the closure does nothing.
            unsafe { cmd.pre_exec(|| Ok(())) };
            cmd.status().expect("spawn")
        })
    });
    group.finish();
    c.final_summary();
}
