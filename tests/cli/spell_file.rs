//! Reading the spell file itself: bounded, with one clear error.

use crate::support::{self, Harness};

/// A spell "file" without end (`/dev/zero`) or over the size limit is
/// refused with one error, not read until memory runs out.
#[test]
fn an_endless_or_huge_spell_file_is_refused() {
    let h = Harness::with_config(support::SANDBOX_ON);
    let out = h.run("/dev/zero", &[]);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(out.stderr.contains("larger than 16 MiB"), "{}", out.dump());
    let big = h.ws.join("spells/big.buzz");
    let file = std::fs::File::create(&big).expect("big spell");
    file.set_len(16 * 1024 * 1024 + 1).expect("sized");
    let out = h.run("big", &[]);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(out.stderr.contains("larger than 16 MiB"), "{}", out.dump());
}
