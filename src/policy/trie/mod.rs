//! The precompiled path trie the gate consults on every path operation.
//!
//! Built once from the grants; [`PathTrie::check`] then walks the bytes of a
//! normalised absolute path with no allocation and no system call. Semantics
//! are Landlock's: a grant covers itself and everything beneath it, and the
//! rights of a path are the union over all its granted ancestors.
//!
//! The edges live in one open-addressing table keyed by the hash of the
//! child's whole path, so the cost of a step does not grow with the number
//! of siblings, and the table probes of successive components depend only
//! on the path (not on the previous probe), which lets the CPU overlap them.

// Unix paths and modes (as the integration tests they were).
#[cfg(all(test, unix))]
mod prop_tests;
mod scan;

use super::grant::{Access, Grant, Mode};
use super::path::{NormalPath, PlainRelative};
use scan::{Name, Names};
use std::collections::BTreeMap;
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
    /// Allowed, or why not.
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

    /// Whether the access may happen.
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
    /// Greatest mode over granted ancestors, this node included.
    mode: Option<Mode>,
    /// Shallowest grant (lowest index at that depth) covering this node.
    read_grant: Option<u32>,
    /// Shallowest `rw` grant (lowest index at that depth) covering it.
    write_grant: Option<u32>,
}

/// The hash of a path extended by `name`, from the hash of the path so far.
/// Collisions only cost a probe: a slot is accepted on its parent and
/// exact name, never on its hash alone.
fn extend(hash: u64, name: &Name) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let len = name.bytes.len() as u64;
    (hash.rotate_left(26) ^ name.head ^ name.tail.rotate_left(13) ^ len).wrapping_mul(K)
}

fn parent_len(parent: u32, name: &Name) -> u64 {
    (u64::from(parent) << 32) | name.bytes.len() as u64
}

/// The hash of `/`, where every walk starts.
const ROOT_HASH: u64 = 0x243f_6a88_85a3_08d3;

/// One parent → child edge, in the table slot its child's path hashes to.
#[derive(Debug, Clone, Default)]
struct Slot {
    hash: u64,
    head: u64,
    tail: u64,
    /// The parent's index above the name's length, so one comparison
    /// checks both (an empty slot's 0 never matches: names are not empty).
    parent_len: u64,
    /// 0 marks an empty slot: the root is nobody's child.
    child: u32,
    /// Whether `child` has no children: below a leaf nothing can change the
    /// decision, so the walk stops there without looking at the node.
    leaf: bool,
    name_start: u32,
}

/// Where a walk down the trie ended: the deepest node matched, the hash of
/// the path up to it, and whether anything below can still match (not
/// after a leaf or a name with no edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrieCursor {
    index: u32,
    hash: u64,
    stopped: bool,
}

/// The compiled form of a list of grants. Node 0 is `/`.
#[derive(Debug, Clone)]
pub struct PathTrie {
    nodes: Vec<Node>,
    /// Open addressing with linear probing, at most half full, so every
    /// probe sequence ends at an empty slot.
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: a hash's top bits pick its first slot.
    shift: u32,
    /// The bytes of every edge's name, for names longer than 16 bytes.
    names: Vec<u8>,
}

/// The build-time tree: plain maps, flattened by [`PathTrie::new`].
#[derive(Default)]
struct BuildNode {
    children: BTreeMap<Vec<u8>, BuildNode>,
    /// Indices of the grants whose path is exactly this node.
    grants: Vec<usize>,
}

/// An edge found while flattening, placed in the table afterwards (the
/// table's size depends on how many there are).
struct PendingEdge {
    hash: u64,
    parent: u32,
    child: u32,
    leaf: bool,
    name: Vec<u8>,
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
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        let inherited = Node {
            mode: None,
            read_grant: None,
            write_grant: None,
        };
        flatten(&root, &inherited, ROOT_HASH, grants, &mut nodes, &mut edges);
        PathTrie::with_edges(nodes, &edges)
    }

    fn with_edges(nodes: Vec<Node>, edges: &[PendingEdge]) -> PathTrie {
        let capacity = (edges.len() * 2).next_power_of_two().max(8);
        let mut trie = PathTrie {
            nodes,
            slots: vec![Slot::default(); capacity],
            shift: 64 - capacity.trailing_zeros(),
            names: Vec::new(),
        };
        for edge in edges {
            trie.insert(edge);
        }
        trie
    }

    fn insert(&mut self, edge: &PendingEdge) {
        let name = Name::new(&edge.name);
        let slot = Slot {
            hash: edge.hash,
            head: name.head,
            tail: name.tail,
            parent_len: parent_len(edge.parent, &name),
            child: edge.child,
            leaf: edge.leaf,
            name_start: self.names.len() as u32,
        };
        self.names.extend_from_slice(&edge.name);
        let mask = self.slots.len() - 1;
        let mut at = (edge.hash >> self.shift) as usize;
        while self.slots[at].child != 0 {
            at = (at + 1) & mask;
        }
        self.slots[at] = slot;
    }

    /// The decision for `path`.
    ///
    /// Hot path: no allocation, no system call, and only the components
    /// down to the deepest matching node are read (the type guarantees the
    /// rest holds no `.` or `..`).
    pub fn check(&self, path: &NormalPath, access: Access) -> Decision {
        let names = Names::new(path.as_os_str().as_encoded_bytes());
        self.decide(self.walk(self.start(), names), access)
    }

    /// Where the walk of `path` ends, to resume below it with
    /// [`PathTrie::check_below`]: the gate walks the spell's directory
    /// once, then only the names each relative spelling adds.
    pub fn cursor(&self, path: &NormalPath) -> TrieCursor {
        self.walk(
            self.start(),
            Names::new(path.as_os_str().as_encoded_bytes()),
        )
    }

    /// The decision for the path `rel` names below the one `at` was made
    /// from: the same as [`PathTrie::check`] on the joined path.
    pub fn check_below(&self, at: TrieCursor, rel: PlainRelative<'_>, access: Access) -> Decision {
        if at.stopped {
            // The usual case (the directory is at or below a leaf grant).
            return self.decide(at, access);
        }
        self.decide(self.walk(at, Names::relative(rel.as_bytes())), access)
    }

    fn start(&self) -> TrieCursor {
        TrieCursor {
            index: 0,
            hash: ROOT_HASH,
            stopped: self.nodes.len() == 1,
        }
    }

    /// Follows `names` down from `at` for as long as they match edges.
    #[inline(always)]
    fn walk(&self, mut at: TrieCursor, mut names: Names<'_>) -> TrieCursor {
        while !at.stopped {
            let Some(name) = names.next() else {
                break;
            };
            at.hash = extend(at.hash, &name);
            match self.child(at.hash, at.index, &name) {
                Some(slot) => (at.index, at.stopped) = (slot.child, slot.leaf),
                // No deeper name can match below a missing edge.
                None => at.stopped = true,
            }
        }
        at
    }

    fn decide(&self, at: TrieCursor, access: Access) -> Decision {
        let Some(node) = self.nodes.get(at.index as usize) else {
            return Decision::DENIED;
        };
        let grant = match access.needed_mode() {
            Mode::Ro => node.read_grant,
            Mode::Rw => node.write_grant,
        };
        Decision::new(node.mode, grant.map(|g| g as usize))
    }

    /// The child of node `parent` called `name`, whose path hashes to `hash`.
    #[inline(always)]
    fn child(&self, hash: u64, parent: u32, name: &Name) -> Option<&Slot> {
        let mask = self.slots.len() - 1;
        let mut at = (hash >> self.shift) as usize;
        let parent_len = parent_len(parent, name);
        loop {
            let slot = self.slots.get(at)?;
            // One branch for the common case: every word equal.
            let differs = (slot.hash ^ hash)
                | (slot.head ^ name.head)
                | (slot.tail ^ name.tail)
                | (slot.parent_len ^ parent_len);
            if differs == 0 && (name.bytes.len() <= 16 || self.long_name_is(slot, name)) {
                return Some(slot);
            }
            if slot.child == 0 {
                return None;
            }
            at = (at + 1) & mask;
        }
    }

    /// For a name longer than 16 bytes, whose middle the words miss.
    fn long_name_is(&self, slot: &Slot, name: &Name) -> bool {
        let start = slot.name_start as usize;
        self.names.get(start..start + name.bytes.len()) == Some(name.bytes)
    }

    /// Number of nodes, `/` included (for tests and benches).
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

/// Appends `node` and its subtree to `nodes`, and its edges to `edges`;
/// returns the new node's index. `hash` is the hash of the node's path.
fn flatten(
    node: &BuildNode,
    parent: &Node,
    hash: u64,
    grants: &[Grant],
    nodes: &mut Vec<Node>,
    edges: &mut Vec<PendingEdge>,
) -> u32 {
    let index = nodes.len() as u32;
    let folded = fold(parent, &node.grants, grants);
    nodes.push(folded.clone());
    for (name, child) in &node.children {
        let child_hash = extend(hash, &Name::new(name));
        let child_index = flatten(child, &folded, child_hash, grants, nodes, edges);
        edges.push(PendingEdge {
            hash: child_hash,
            parent: index,
            child: child_index,
            leaf: child.children.is_empty(),
            name: name.clone(),
        });
    }
    index
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
        mode: parent.mode.max(own_mode),
        read_grant: parent.read_grant.or_else(|| lowest(Mode::Ro)),
        write_grant: parent.write_grant.or_else(|| lowest(Mode::Rw)),
    }
}

/// The components of a grant's path, or `None` when it cannot match.
fn grant_components(path: &Path) -> Option<Vec<&[u8]>> {
    let rest = path.as_os_str().as_encoded_bytes().strip_prefix(b"/")?;
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

    fn normal(path: &str) -> NormalPath {
        NormalPath::new(path).expect("a normal test path")
    }

    #[test]
    fn a_grant_holding_a_nul_byte_never_matches_its_look_alike() {
        let grants = [grant("/w\0", Mode::Rw), grant("/\u{ff}\0", Mode::Rw)];
        let trie = PathTrie::new(&grants);
        for path in ["/w", "/w/x", "/\u{ff}"] {
            let decision = trie.check(&normal(path), Access::Read);
            assert!(!decision.is_allowed(), "{path:?}");
            assert_eq!(
                decision,
                crate::policy::reference::check(&grants, Path::new(path), Access::Read)
            );
        }
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
        let d = |p: &str, a| trie.check(&normal(p), a);
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
        ];
        for (name, path, access, mode, grant) in cases {
            let got = d(path, access);
            assert_eq!((got.mode, got.grant), (mode, grant), "case {name}");
            assert_eq!(got.is_allowed(), grant.is_some(), "case {name}");
        }
    }

    /// Resuming below a directory's cursor decides as checking the whole
    /// path does, wherever the directory's own walk stopped.
    #[test]
    fn check_below_agrees_with_check() {
        let trie = PathTrie::new(&[
            grant("/w", Mode::Rw),
            grant("/w/ro", Mode::Ro),
            grant("/w/ro/deep/rw", Mode::Rw),
            grant("/usr", Mode::Ro),
            grant("/a-very-long-directory-name/x", Mode::Ro),
        ]);
        let dirs = [
            "/",
            "/w",
            "/w/ro",
            "/w/ro/deep",
            "/usr/lib",
            "/nope",
            "/a-very-long-directory-name",
        ];
        let rels = [
            "x",
            "ro/f",
            "ro/deep/rw/f",
            "deep/rw",
            "usr",
            "w/ro",
            "x/y/z",
            "a-very-long-directory-name/x/f",
        ];
        for dir in dirs {
            let cursor = trie.cursor(&normal(dir));
            for rel in rels {
                let plain = PlainRelative::new(rel.as_bytes()).expect("plain");
                let joined = normal(&format!("{}/{rel}", dir.trim_end_matches('/')));
                for access in [Access::Read, Access::Write, Access::Execute] {
                    assert_eq!(
                        trie.check_below(cursor, plain, access),
                        trie.check(&joined, access),
                        "{dir} + {rel} {access:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_granted_root_covers_everything() {
        let trie = PathTrie::new(&[grant("/", Mode::Ro), grant("/", Mode::Rw)]);
        let got = trie.check(&normal("/any/thing"), Access::Read);
        assert_eq!((got.mode, got.grant), (Some(Mode::Rw), Some(0)));
        let got = trie.check(&normal("/any/thing"), Access::Write);
        assert_eq!(got.grant, Some(1));
    }

    #[test]
    fn empty_trie_denies() {
        let trie = PathTrie::new(&[]);
        assert_eq!(trie.check(&normal("/x"), Access::Read), Decision::DENIED);
        assert_eq!(trie.node_count(), 1);
    }
}
