//! A naive linear-scan implementation of [`PathTrie::check`](super::PathTrie::check),
//! written for clarity, not speed. Property tests compare the trie against it
//! and benches measure the trie's gain over it; the gate never uses it.

use super::grant::{Access, Grant, Mode};
use super::trie::Decision;
use std::path::Path;

/// The decision for `path` over `grants`, by scanning every grant.
///
/// Same contract as the trie: a relative path, or one with a `.` or `..`
/// component, is denied; empty components are ignored; a grant covers its
/// own path and everything beneath it, component-wise.
pub fn check(grants: &[Grant], path: &Path, access: Access) -> Decision {
    let Some(target) = components(path) else {
        return Decision::DENIED;
    };
    let mut mode: Option<Mode> = None;
    // (depth, index) of the shallowest, then lowest-indexed, opening grant.
    let mut opener: Option<(usize, usize)> = None;
    for (index, grant) in grants.iter().enumerate() {
        let Some(root) = components(&grant.path) else {
            continue;
        };
        if !target.starts_with(&root) {
            continue;
        }
        mode = mode.max(Some(grant.mode));
        if grant.mode.permits(access) {
            let candidate = (root.len(), index);
            opener = Some(opener.map_or(candidate, |best| best.min(candidate)));
        }
    }
    Decision::new(mode, opener.map(|(_, index)| index))
}

/// Non-empty components of an absolute path without `.` or `..`.
fn components(path: &Path) -> Option<Vec<&[u8]>> {
    let bytes = path.as_os_str().as_encoded_bytes();
    if !bytes.starts_with(b"/") {
        return None;
    }
    let parts: Vec<&[u8]> = bytes
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    let normal = parts.iter().all(|c| *c != b"." && *c != b"..");
    normal.then_some(parts)
}
