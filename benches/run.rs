//! `magus run` of an empty spell, sandbox on against off (docs/benchmarks.md:
//! ≤ 15 ms wall, ≤ 5 ms more than off). The on side pays for everything a
//! real run does: policy resolution, the scrubbing re-exec (a secret is in
//! the environment), the jail (namespaces and the view), dropping every
//! capability, the syscall guard and Landlock. `sandbox_on_network_deny`
//! adds the loopback-only network namespace of `network: deny`, and
//! `sandbox_on_network_hosts` the listeners of `network: {hosts}` (its
//! proxy is forked at the spell's first launch, so an empty spell starts
//! none).
//!
//! `run_one_launch` runs a spell that starts `/bin/true` once, with
//! `network: deny` and with `hosts`: the difference is what the proxy's
//! fork at the first launch costs a run.

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;
use std::process::Command;

const EMPTY_SPELL: &str = "fun main(args: [str]) > void {}\n";
const ONE_LAUNCH_SPELL: &str =
    "import \"sh\";\nfun main(args: [str]) > void {\n    sh.run([\"/bin/true\"]);\n}\n";

/// A workspace named `name` with the spells `empty` and `one_launch`, the
/// sandbox `enabled` or not, and `network`.
fn workspace(root: &Path, name: &str, enabled: bool, network: &str) -> std::path::PathBuf {
    let ws = root.join(name);
    std::fs::create_dir_all(ws.join("spells")).expect("workspace");
    std::fs::write(ws.join("spells/empty.buzz"), EMPTY_SPELL).expect("spell");
    std::fs::write(ws.join("spells/one_launch.buzz"), ONE_LAUNCH_SPELL).expect("spell");
    let config = format!("sandbox:\n  enabled: {enabled}\n  network: {network}\n");
    std::fs::write(ws.join("magus.yaml"), config).expect("config");
    ws
}

fn run_spell(magus: &Path, ws: &Path, home: &Path, spell: &str) {
    let status = Command::new(magus)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("GITHUB_TOKEN", "ghp_bench_secret")
        .args([
            "--workspace".as_ref(),
            ws.as_os_str(),
            "run".as_ref(),
            spell.as_ref(),
        ])
        // What the run says (MGS2003) is not what is measured, and would
        // stand in the test output as stray lines.
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("magus runs");
    assert!(status.success(), "magus run {spell} failed: {status}");
}

fn bench_run(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    // A copy, as an installed magus is: the file the linker wrote starts
    // 0.4-0.7 ms slower on this machine than any copy of it (same syscalls
    // and instruction count), which is the linker's doing, not magus's.
    let magus = dir.path().join("magus");
    std::fs::copy(env!("CARGO_BIN_EXE_magus"), &magus).expect("copy of magus");
    let hosts = "{hosts: [crates.io, \"*.crates.io\", \"github.com:443\"]}";
    let mut group = c.benchmark_group("run_empty_spell");
    let cases = [
        ("sandbox_off", false, "allow"),
        ("sandbox_on", true, "allow"),
        ("sandbox_on_network_deny", true, "deny"),
        ("sandbox_on_network_hosts", true, hosts),
    ];
    let mut made = Vec::new();
    for (name, enabled, network) in cases {
        let ws = workspace(dir.path(), name, enabled, network);
        group.bench_function(name, |b| b.iter(|| run_spell(&magus, &ws, &home, "empty")));
        made.push((name, ws));
    }
    group.finish();
    let mut group = c.benchmark_group("run_one_launch");
    for (name, ws) in &made[2..] {
        group.bench_function(*name, |b| {
            b.iter(|| run_spell(&magus, ws, &home, "one_launch"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_run);
criterion_main!(benches);
