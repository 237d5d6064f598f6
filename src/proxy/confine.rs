//! The proxy process confines itself before it serves a byte (when the
//! first client connects; until then it only waits): it parses
//! what sandboxed children send, outside their sandbox, so a bug in it must
//! not hand them magus's privileges. It drops every capability and keeps
//! read-only access to what name resolution reads (`/etc`, the libraries
//! of NSS, `/run` for a stub resolver's `resolv.conf`), and nothing else;
//! its TCP stays unrestricted, since connecting out is its job.
//! Best effort: a kernel without Landlock leaves the capability drop.

use crate::enforce::landlock::build_ruleset;
use crate::policy::{Grant, GrantSource, Mode, Network};
use caps::CapSet;
use std::path::Path;

/// What name resolution reads.
const READ_ONLY: [&str; 5] = ["/etc", "/usr", "/lib", "/lib64", "/run"];

/// Drops capabilities, then restricts the filesystem to [`READ_ONLY`].
pub(super) fn confine_proxy() {
    drop_capabilities();
    // Best effort like the rest; where it fails, Landlock's scoping (if
    // any) still keeps children out (`crate::enforce::untraceable`).
    let _ = crate::enforce::untraceable::refuse_tracing();
    let grants: Vec<Grant> = READ_ONLY
        .iter()
        .map(Path::new)
        .filter(|p| p.exists())
        .map(|p| Grant {
            path: p.to_path_buf(),
            mode: Mode::Ro,
            source: GrantSource::Builtin("the proxy's name resolution"),
        })
        .collect();
    if let Ok(ruleset) = build_ruleset(&grants, &Network::Allow) {
        let _ = ruleset.restrict_self();
    }
}

fn drop_capabilities() {
    // The bounding set needs CAP_SETPCAP, so it goes first.
    for capability in caps::all() {
        let _ = caps::drop(None, CapSet::Bounding, capability);
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        let _ = caps::clear(None, set);
    }
}
