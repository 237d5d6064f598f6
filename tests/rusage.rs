//! `magus run` accounts for its spell's CPU time: the caller's `wait4`
//! (what `time magus run` and `benches/compare.py --clock cpu` read) sees
//! the time of every process of the run, the jail's included. A run whose
//! waiter returned without reaping the jail's PID 1 gave only its own few
//! milliseconds of start-up.

#![cfg(unix)]

#[path = "scratch/mod.rs"]
mod scratch;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// A spell that does nothing but count: all its time is CPU time.
const BUSY: &str = "fun main(args: [str]) > void {\n    var i = 0;\n    while (i < 1500000) {\n        i = i + 1;\n    }\n}\n";

/// Runs `magus run busy` in a workspace whose sandbox is `enabled` and
/// returns the user + system CPU seconds `wait4` gives for it.
// The child is reaped by `wait4`, which std's `Child` has no call for.
#[allow(clippy::zombie_processes)]
fn cpu_of_run(enabled: bool) -> f64 {
    let ws = tempfile::tempdir_in(scratch::base()).unwrap();
    std::fs::create_dir_all(ws.path().join("spells")).unwrap();
    let config = format!("sandbox:\n  enabled: {enabled}\n");
    std::fs::write(ws.path().join("magus.yaml"), config).unwrap();
    std::fs::write(ws.path().join("spells/busy.buzz"), BUSY).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_magus"))
        .args(["-q", "--workspace"])
        .arg(ws.path())
        .args(["run", "busy"])
        .env("HOME", Path::new(ws.path()))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own unreaped child; both pointers are live.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let exit = std::process::ExitStatus::from_raw(status);
    assert_eq!(exit.code(), Some(0), "magus run busy: {exit}");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The sandboxed run's CPU time is the spell's, not only magus's start-up:
/// at least half of what the same spell takes with the sandbox off (the
/// control; both count the same 1.5 million steps). A ratio of CPU times,
/// not a wall-clock bound.
#[test]
fn the_spells_cpu_time_reaches_the_caller() {
    let off = cpu_of_run(false);
    let on = cpu_of_run(true);
    assert!(off > 0.0, "the control run used no CPU time");
    assert!(
        on >= off / 2.0,
        "sandboxed run: {on:.3} s of CPU reached the caller, sandbox off: {off:.3} s"
    );
}
