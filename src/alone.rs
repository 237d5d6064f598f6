//! One lib test run by itself in a fresh copy of the test binary, for a
//! test that changes the whole process (its descriptors) or measures it
//! (the memory count, which the tests running beside it in the runner
//! move). The copy runs that test alone, and the runner checks that it
//! did run and pass: a name that matches no test would pass as well.

/// Set in the copy, to what the runner passed the test.
const CHILD: &str = "MAGUS_TEST_ALONE";

/// In the copy, what the runner passed; in the runner, `None`.
pub(crate) fn passed() -> Option<String> {
    std::env::var(CHILD).ok()
}

/// Runs the test `name` (its path in the lib tests, as `--list` gives
/// it) in a copy of this binary that is given `value`; panics unless it
/// ran there and passed.
pub(crate) fn run(name: &str, value: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args(["--exact", name, "--test-threads=1"])
        .env(CHILD, value)
        .output()
        .expect("the test binary runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("test result: ok. 1 passed"),
        "{name} ({value}): {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
