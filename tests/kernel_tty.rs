//! A confined child whose controlling terminal is a pty cannot inject
//! input with `TIOCSTI`, use `TIOCLINUX`, nor change the terminal's line
//! discipline with `TIOCSETD` (EPERM from the terminal guard), root
//! included, even with high bits set in the request; without
//! the guard the same `TIOCSTI` succeeds, so the guard is what stops it.

mod kernel_support;

use std::process::Stdio;

use kernel_support::*;

fn main() {
    main_with(
        "kernel_tty",
        &[
            ("guard_refuses_tiocsti_and_tioclinux", guarded),
            ("guard_refuses_as_nobody", guarded_nobody),
            ("control_without_guard_tiocsti_works", control),
        ],
    );
}

const PROBE: &str = r#"
import ctypes, errno, fcntl, struct, termios
def attempt(name, call):
    try:
        call()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
attempt("TIOCSTI", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
attempt("TIOCLINUX", lambda: fcntl.ioctl(0, 0x541C, bytes(8)))
# N_NULL (27) discards everything: left in place, the user's terminal is
# dead after the run. Setting N_TTY back is refused the same way.
attempt("TIOCSETD", lambda: fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", 27)))
attempt("TIOCSETD-BACK", lambda: fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", 0)))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
rc = libc.syscall(ctypes.c_long(16), ctypes.c_long(0), ctypes.c_ulong(0x100005412), ctypes.c_char_p(b"y"))
print("TIOCSTI-HIGH", "ok" if rc == 0 else errno.errorcode.get(ctypes.get_errno()))
"#;

fn run(guard: bool, as_nobody: bool) -> Result<String, String> {
    let pty = nix::pty::openpty(None, None).map_err(|e| e.to_string())?;
    let spec = Spec {
        pidns: true,
        guard,
        landlock: true,
        nested: true,
        take_tty: true,
        grants: {
            let mut g = system_grants();
            g.push(("/dev/pts".into(), "rw".into()));
            g
        },
        argv: vec!["/usr/bin/python3".into(), "-c".into(), PROBE.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Spec::default()
    };
    let mut launch = Launch::new(&spec);
    launch.as_nobody = as_nobody;
    launch.stdin = Some(Stdio::from(pty.slave));
    let out = launch.run()?;
    drop(pty.master);
    let all = text(&out);
    check(out.status.success() && all.contains("TIOCSTI-HIGH"), || {
        format!("probe did not run:\n{all}")
    })?;
    Ok(all)
}

fn all_refused(all: &str) -> Result<(), String> {
    for line in [
        "TIOCSTI EPERM",
        "TIOCLINUX EPERM",
        "TIOCSETD EPERM",
        "TIOCSETD-BACK EPERM",
        "TIOCSTI-HIGH EPERM",
    ] {
        check(all.contains(line), || format!("missing `{line}`:\n{all}"))?;
    }
    Ok(())
}

fn guarded() -> CaseResult {
    all_refused(&run(true, false)?)?;
    Ok(Outcome::Pass)
}

fn guarded_nobody() -> CaseResult {
    if let Err(why) = can_switch_user() {
        return Ok(Outcome::Skip(why));
    }
    all_refused(&run(true, true)?)?;
    Ok(Outcome::Pass)
}

fn control() -> CaseResult {
    if !nix::unistd::geteuid().is_root() {
        return Ok(Outcome::Skip("TIOCSTI may be disabled for non-root".into()));
    }
    let all = run(false, false)?;
    check(
        all.contains("TIOCSTI ok")
            && all.contains("TIOCSETD ok")
            && all.contains("TIOCSETD-BACK ok")
            && all.contains("TIOCSTI-HIGH ok")
            && !all.contains("TIOCLINUX EPERM"),
        || format!("control: expected TIOCSTI to work:\n{all}"),
    )?;
    Ok(Outcome::Pass)
}
