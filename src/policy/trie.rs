//! The precompiled path trie the gate consults on every path operation.
//!
//! Built once from the grants; [`PathTrie::check`] then walks the bytes of a
//! normalised absolute path with no allocation and no system call. Semantics
//! are Landlock's: a grant covers itself and everything beneath it, and the
//! rights of a path are the union over all its granted ancestors.

use super::grant::{Access, Grant, Mode};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Whether an access is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied,
}

/// The answer to "may `access` happen at this path?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    /// The rights of the path: the greatest mode over all granted ancestors
    /// (itself included), or `None` when nothing grants it.
    pub mode: Option<Mode>,
    /// Index into `Policy::grants` of the shallowest granted ancestor whose
    /// mode permits the access: the root beneath which the gate opens the
    /// path. `None` exactly when the access is denied.
    pub grant: Option<usize>,
}

impl Decision {
    /// The decision for a path nothing grants (or a malformed path).
    pub const DENIED: Decision = Decision {
        verdict: Verdict::Denied,
        mode: None,
        grant: None,
    };

    pub fn is_allowed(&self) -> bool {
        self.verdict == Verdict::Allowed
    }

    /// Builds the decision from the rights of a path and the grant that
    /// opens it for the access asked about.
    pub(crate) fn new(mode: Option<Mode>, grant: Option<usize>) -> Decision {
        let verdict = match grant {
            Some(_) => Verdict::Allowed,
            None => Verdict::Denied,
        };
        Decision {
            verdict,
            mode,
            grant,
        }
    }
}

/// One node of the trie, with the facts of its whole ancestry folded in so
/// the walk only has to find the deepest matching node.
#[derive(Debug, Clone)]
struct Node {
    first_edge: u32,
    edge_count: u32,
    /// Greatest mode over granted ancestors, this node included.
    mode: Option<Mode>,
    /// Shallowest grant (lowest index at that depth) covering this node.
    read_grant: Option<u32>,
    /// Shallowest `rw` grant (lowest index at that depth) covering it.
    write_grant: Option<u32>,
}

/// An edge to a child. `key` is the name's first 8 bytes, big-endian and
/// zero-padded, so most comparisons are one integer compare; the length
/// breaks ties, since a hand-built `Path` may hold NUL bytes that the
/// padding would otherwise hide.
#[derive(Debug, Clone)]
struct Edge {
    key: u64,
    name_start: u32,
    name_len: u32,
    child: u32,
}

/// The compiled form of a list of grants. Node 0 is `/`.
#[derive(Debug, Clone)]
pub struct PathTrie {
    nodes: Vec<Node>,
    /// Edges of each node are contiguous and sorted by name bytes.
    edges: Vec<Edge>,
    names: Vec<u8>,
}

/// The build-time tree: plain maps, flattened by [`PathTrie::new`].
#[derive(Default)]
struct BuildNode {
    children: BTreeMap<Vec<u8>, BuildNode>,
    /// Indices of the grants whose path is exactly this node.
    grants: Vec<usize>,
}

impl PathTrie {
    /// Compiles `grants`. A grant whose path is not absolute or has a `.`
    /// or `..` component can never match and is left out (resolution only
    /// produces canonical paths, so this guards hand-built policies).
    pub fn new(grants: &[Grant]) -> PathTrie {
        let mut root = BuildNode::default();
        for (index, grant) in grants.iter().enumerate() {
            let Some(components) = grant_components(&grant.path) else {
                continue;
            };
            let mut node = &mut root;
            for name in components {
                node = node.children.entry(name.to_vec()).or_default();
            }
            node.grants.push(index);
        }
        let mut trie = PathTrie {
            nodes: Vec::new(),
            edges: Vec::new(),
            names: Vec::new(),
        };
        let inherited = Node {
            first_edge: 0,
            edge_count: 0,
            mode: None,
            read_grant: None,
            write_grant: None,
        };
        trie.flatten(&root, &inherited, grants);
        trie
    }

    /// Appends `node` and its subtree; returns the new node's index.
    fn flatten(&mut self, node: &BuildNode, parent: &Node, grants: &[Grant]) -> u32 {
        let index = self.nodes.len();
        let folded = fold(parent, &node.grants, grants);
        self.nodes.push(folded.clone());
        let first_edge = self.edges.len();
        for name in node.children.keys() {
            let name_start = self.names.len() as u32;
            self.names.extend_from_slice(name);
            self.edges.push(Edge {
                key: name_key(name),
                name_start,
                name_len: name.len() as u32,
                child: 0,
            });
        }
        for (offset, child) in node.children.values().enumerate() {
            let child_index = self.flatten(child, &folded, grants);
            self.edges[first_edge + offset].child = child_index;
        }
        let entry = &mut self.nodes[index];
        entry.first_edge = first_edge as u32;
        entry.edge_count = node.children.len() as u32;
        index as u32
    }

    /// The decision for `path`, a normalised absolute path.
    ///
    /// Hot path: no allocation, no system call. Empty components (`//`, a
    /// trailing `/`) are skipped; a relative path or one with a `.` or `..`
    /// component is not normalised and is denied outright.
    pub fn check(&self, path: &Path, access: Access) -> Decision {
        let bytes = path.as_os_str().as_bytes();
        let Some(rest) = bytes.strip_prefix(b"/") else {
            return Decision::DENIED;
        };
        let Some(mut node) = self.nodes.first() else {
            return Decision::DENIED;
        };
        let mut components = Components(rest);
        for component in components.by_ref() {
            match component {
                b"" => {}
                b"." | b".." => return Decision::DENIED,
                _ => match self.child(node, component) {
                    Some(child) => node = child,
                    None => break,
                },
            }
        }
        // Below the deepest match only normalisation is left to verify.
        if has_dot_component(components.0) {
            return Decision::DENIED;
        }
        let grant = match access.needed_mode() {
            Mode::Ro => node.read_grant,
            Mode::Rw => node.write_grant,
        };
        Decision::new(node.mode, grant.map(|g| g as usize))
    }

    fn child(&self, node: &Node, name: &[u8]) -> Option<&Node> {
        let start = node.first_edge as usize;
        let edges = self.edges.get(start..start + node.edge_count as usize)?;
        let key = name_key(name);
        let short = name.len() <= 8;
        let found = edges
            .binary_search_by(|edge| {
                edge.key.cmp(&key).then_with(|| {
                    // Keys are zero-padded: `a` and `a\0` share one, so
                    // short names still differ by length (found by fuzzing).
                    if short && edge.name_len <= 8 {
                        (edge.name_len as usize).cmp(&name.len())
                    } else {
                        self.name(edge).cmp(name)
                    }
                })
            })
            .ok()?;
        self.nodes.get(edges[found].child as usize)
    }

    fn name(&self, edge: &Edge) -> &[u8] {
        let start = edge.name_start as usize;
        &self.names[start..start + edge.name_len as usize]
    }

    /// Number of nodes, `/` included (for tests and benches).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

/// The `/`-separated components of a byte string, found eight bytes at a
/// time: splitting is most of the cost of a check once the trie is small.
struct Components<'a>(&'a [u8]);

impl<'a> Iterator for Components<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.0.is_empty() {
            return None;
        }
        let rest = self.0;
        match find_byte(rest, b'/') {
            Some(at) => {
                self.0 = &rest[at + 1..];
                Some(&rest[..at])
            }
            None => {
                self.0 = &[];
                Some(rest)
            }
        }
    }
}

/// Whether the components in `bytes` include `.` or `..`.
fn has_dot_component(bytes: &[u8]) -> bool {
    let mut from = 0;
    while let Some(found) = find_byte(&bytes[from..], b'.') {
        let at = from + found;
        if at == 0 || bytes[at - 1] == b'/' {
            let after = &bytes[at + 1..];
            let tail = after.strip_prefix(b".").unwrap_or(after);
            if tail.first().is_none_or(|&b| b == b'/') {
                return true;
            }
        }
        from = at + 1;
    }
    false
}

/// The first index of `needle`, testing a word at a time (the classic
/// "has zero byte" trick: only the lowest flagged byte is exact, and that
/// is the one taken).
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|&b| b == needle).map(|p| offset + p)
}

/// The first 8 bytes of `name` as a big-endian integer, zero-padded: the
/// integers order as the byte strings do.
///
/// Built from whole words or byte by byte in registers: a variable-length
/// copy into a buffer then read back as a word costs a `memcpy` call and a
/// store-forwarding stall, which was most of a check's time.
fn name_key(name: &[u8]) -> u64 {
    if let Some(word) = name.first_chunk::<8>() {
        return u64::from_be_bytes(*word);
    }
    name.iter()
        .enumerate()
        .fold(0, |key, (i, &b)| key | u64::from(b) << (56 - 8 * i))
}

/// The node for a path holding `here` (grant indices at exactly this path),
/// below a parent whose ancestry is already folded into `parent`.
fn fold(parent: &Node, here: &[usize], grants: &[Grant]) -> Node {
    let own_mode = here.iter().map(|&i| grants[i].mode).max();
    let lowest = |wanted: Mode| {
        here.iter()
            .copied()
            .filter(|&i| grants[i].mode >= wanted)
            .min()
            .map(|i| i as u32)
    };
    Node {
        first_edge: 0,
        edge_count: 0,
        mode: parent.mode.max(own_mode),
        read_grant: parent.read_grant.or_else(|| lowest(Mode::Ro)),
        write_grant: parent.write_grant.or_else(|| lowest(Mode::Rw)),
    }
}

/// The components of a grant's path, or `None` when it cannot match.
fn grant_components(path: &Path) -> Option<Vec<&[u8]>> {
    let rest = path.as_os_str().as_bytes().strip_prefix(b"/")?;
    let components: Vec<&[u8]> = rest
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    if components.iter().any(|c| matches!(*c, b"." | b"..")) {
        return None;
    }
    Some(components)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::grant::GrantSource;

    fn grant(path: &str, mode: Mode) -> Grant {
        Grant {
            path: path.into(),
            mode,
            source: GrantSource::Builtin("test"),
        }
    }

    #[test]
    fn trailing_nul_bytes_do_not_match_a_shorter_name() {
        let grants = [grant("/\u{ff}", Mode::Rw), grant("/w", Mode::Rw)];
        let trie = PathTrie::new(&grants);
        for path in ["/w\0", "/w\0\0/x", "/\u{ff}\0"] {
            let path = Path::new(path);
            let decision = trie.check(path, Access::Read);
            assert!(!decision.is_allowed(), "{path:?}");
            assert_eq!(
                decision,
                crate::policy::reference::check(&grants, path, Access::Read)
            );
        }
        assert!(trie.check(Path::new("/w/x"), Access::Write).is_allowed());
    }

    #[test]
    fn decisions_follow_landlock_semantics() {
        let trie = PathTrie::new(&[
            grant("/w", Mode::Rw),
            grant("/w/ro", Mode::Ro),
            grant("/usr", Mode::Ro),
            grant("/usr/local/rw", Mode::Rw),
            grant("/foo", Mode::Ro),
        ]);
        let d = |p: &str, a| trie.check(Path::new(p), a);
        let cases = [
            ("in rw", "/w/x/y", Access::Write, Some(Mode::Rw), Some(0)),
            (
                "ro under rw adds nothing",
                "/w/ro/f",
                Access::Write,
                Some(Mode::Rw),
                Some(0),
            ),
            (
                "ro under rw read opens at rw",
                "/w/ro/f",
                Access::Read,
                Some(Mode::Rw),
                Some(0),
            ),
            (
                "ro write denied",
                "/usr/bin/ls",
                Access::Write,
                Some(Mode::Ro),
                None,
            ),
            (
                "ro exec",
                "/usr/bin/ls",
                Access::Execute,
                Some(Mode::Ro),
                Some(2),
            ),
            (
                "rw under ro writes",
                "/usr/local/rw/x",
                Access::Write,
                Some(Mode::Rw),
                Some(3),
            ),
            (
                "rw under ro reads at ro root",
                "/usr/local/rw/x",
                Access::Read,
                Some(Mode::Rw),
                Some(2),
            ),
            ("prefix look-alike", "/foobar", Access::Read, None, None),
            ("exact grant", "/foo", Access::Read, Some(Mode::Ro), Some(4)),
            ("root", "/", Access::Read, None, None),
            ("relative", "w/x", Access::Read, None, None),
            ("dotdot", "/w/../etc", Access::Read, None, None),
            ("dotdot after miss", "/x/../w", Access::Read, None, None),
            (
                "trailing slash",
                "/w/",
                Access::Write,
                Some(Mode::Rw),
                Some(0),
            ),
        ];
        for (name, path, access, mode, grant) in cases {
            let got = d(path, access);
            assert_eq!((got.mode, got.grant), (mode, grant), "case {name}");
            assert_eq!(got.is_allowed(), grant.is_some(), "case {name}");
        }
    }

    #[test]
    fn a_granted_root_covers_everything() {
        let trie = PathTrie::new(&[grant("/", Mode::Ro), grant("/", Mode::Rw)]);
        let got = trie.check(Path::new("/any/thing"), Access::Read);
        assert_eq!((got.mode, got.grant), (Some(Mode::Rw), Some(0)));
        let got = trie.check(Path::new("/any/thing"), Access::Write);
        assert_eq!(got.grant, Some(1));
    }

    #[test]
    fn word_at_a_time_search_matches_a_plain_scan() {
        let hays: [&[u8]; 6] = [
            b"",
            b"/",
            b"abcdefgh/",
            b"abcdefghijklmnop/q",
            b"\x80\xff/.",
            b"a.b/../c",
        ];
        for hay in hays {
            for needle in [b'/', b'.', b'q', 0x80] {
                assert_eq!(
                    find_byte(hay, needle),
                    hay.iter().position(|&b| b == needle),
                    "{hay:?}"
                );
            }
        }
        let dotted = [
            ("a/./b", true),
            ("a/..", true),
            (".", true),
            ("a/.b", false),
            ("a../b", false),
            ("a/b.", false),
            ("...", false),
            ("x/.../..", true),
        ];
        for (rest, want) in dotted {
            assert_eq!(has_dot_component(rest.as_bytes()), want, "{rest}");
        }
        let parts: Vec<&[u8]> = Components(b"a//bcdefghijk/").collect();
        assert_eq!(parts, [&b"a"[..], b"", b"bcdefghijk"]);
    }

    #[test]
    fn empty_trie_denies() {
        let trie = PathTrie::new(&[]);
        assert_eq!(trie.check(Path::new("/x"), Access::Read), Decision::DENIED);
        assert_eq!(trie.node_count(), 1);
    }
}
