//! Who a test runs `magus` as, and under what kernel: root or uid 65534
//! (through `setpriv`), with the namespaces the kernel grants, or with
//! user namespaces (or every namespace) refused by `tests/jail/nouserns.c`.
//! One place for what the attack suites share.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Who runs magus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum User {
    Root,
    /// uid and gid 65534, no supplementary groups.
    Nobody,
}

/// How the kernel answers the run's namespace requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    AsIs,
    /// `CLONE_NEWUSER` refused (Ubuntu's default for ordinary users).
    NoUserNamespaces,
    /// Every namespace refused (a container without `CAP_SYS_ADMIN`).
    NoNamespaces,
}

/// `setpriv` to uid/gid 65534.
pub(crate) const AS_NOBODY: [&str; 4] = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
];

/// A spell that runs its first argument with `sh.shell` and prints
/// `STATUS <code>`.
pub(crate) const SHELL_SPELL: &str = "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"STATUS {sh.shell(args[0])}\");\n    return 0;\n}\n";

/// `tests/jail/nouserns.c`, compiled once per test binary.
pub(crate) fn nouserns_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| super::compile_c("jail/nouserns.c", "nouserns"))
}

/// The programs to start magus through (`Harness::wrapped_command`) for
/// `user` under `kernel`.
pub(crate) fn wrapper(user: User, kernel: Kernel) -> Vec<&'static str> {
    let nouserns = nouserns_binary().to_str().expect("a UTF-8 path");
    let mut wrapper = match kernel {
        Kernel::AsIs => vec![],
        Kernel::NoUserNamespaces => vec![nouserns],
        Kernel::NoNamespaces => vec![nouserns, "--all"],
    };
    if user == User::Nobody {
        wrapper.extend(AS_NOBODY);
    }
    wrapper
}

/// Gives `dir` (recursively) to `user`.
pub(crate) fn hand_over(dir: &Path, user: User) {
    if user == User::Nobody {
        let status = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(dir)
            .status()
            .expect("run chown");
        assert!(status.success());
    }
}

/// The one warning of a run whose kernel refused namespaces (for real, not
/// by `MAGUS_SANDBOX_USERNS`), said once, naming each of `names`.
pub(crate) fn assert_one_warning(
    who: impl std::fmt::Debug,
    out: &super::RunOutput,
    names: &[&str],
) {
    assert_eq!(
        out.stderr.matches("only partly in force").count(),
        1,
        "{who:?}: {}",
        out.dump()
    );
    for name in names {
        assert!(
            out.stderr.contains(name),
            "{who:?} lacks {name:?}: {}",
            out.dump()
        );
    }
    assert!(
        !out.stderr.contains("MAGUS_SANDBOX_USERNS"),
        "the kernel refused, not the override: {}",
        out.dump()
    );
}
