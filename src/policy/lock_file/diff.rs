//! What changed between the locked and the declared policy, sorted into
//! what widens the sandbox (a reviewer must look) and what narrows it.
//! Only declared facts are compared, never resolved paths.

use crate::policy::limits::{Bytes, Seconds};
use crate::policy::{CanonicalPolicy, Limits, Mode, Network};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Whether a change gives spells more or less than the lock did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Spells may reach more: a reviewer must look.
    Widened,
    /// Spells may reach less.
    Narrowed,
}

impl Direction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::Widened => "widened",
            Direction::Narrowed => "narrowed",
        }
    }
}

/// One declared fact that differs, e.g. `+ allow ~/.ssh (rw)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub direction: Direction,
    /// A diff-like line: `+ ...` added, `- ...` removed, `~ ...` changed.
    pub text: String,
}

impl fmt::Display for Change {
    /// `widened: + allow ~/.ssh (rw)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.direction.as_str(), self.text)
    }
}

/// Every change from `locked` to `declared`: widening changes first, then
/// narrowing ones, each group in the canonical order of the facts.
pub(crate) fn diff(locked: &CanonicalPolicy, declared: &CanonicalPolicy) -> Vec<Change> {
    let mut changes = Vec::new();
    enabled_changes(locked.enabled, declared.enabled, &mut changes);
    allow_changes(&locked.allow, &declared.allow, &mut changes);
    passthrough_changes(&locked.passthrough, &declared.passthrough, &mut changes);
    network_changes(&locked.network, &declared.network, &mut changes);
    limit_changes(&locked.limits, &declared.limits, &mut changes);
    secret_changes(&locked.secrets, &declared.secrets, &mut changes);
    changes.sort_by_key(|c| c.direction == Direction::Narrowed);
    changes
}

fn push(changes: &mut Vec<Change>, direction: Direction, text: String) {
    changes.push(Change { direction, text });
}

fn enabled_changes(locked: bool, declared: bool, changes: &mut Vec<Change>) {
    if locked != declared {
        // Turning the sandbox off gives spells everything.
        let direction = match declared {
            false => Direction::Widened,
            true => Direction::Narrowed,
        };
        push(
            changes,
            direction,
            format!("~ enabled: {locked} → {declared}"),
        );
    }
}

/// Path → the greatest mode any entry gives it (what Landlock would do).
fn modes(allow: &[(String, Mode)]) -> BTreeMap<&str, Mode> {
    let mut map: BTreeMap<&str, Mode> = BTreeMap::new();
    for (path, mode) in allow {
        let slot = map.entry(path.as_str()).or_insert(*mode);
        *slot = (*slot).max(*mode);
    }
    map
}

fn allow_changes(locked: &[(String, Mode)], declared: &[(String, Mode)], out: &mut Vec<Change>) {
    let (old, new) = (modes(locked), modes(declared));
    for (path, mode) in &new {
        match old.get(path) {
            None => push(out, Direction::Widened, format!("+ allow {path} ({mode})")),
            Some(was) if was < mode => push(
                out,
                Direction::Widened,
                format!("~ allow {path}: {was} → {mode}"),
            ),
            Some(was) if was > mode => push(
                out,
                Direction::Narrowed,
                format!("~ allow {path}: {was} → {mode}"),
            ),
            Some(_) => {}
        }
    }
    for (path, mode) in &old {
        if !new.contains_key(path) {
            push(out, Direction::Narrowed, format!("- allow {path} ({mode})"));
        }
    }
}

fn passthrough_changes(locked: &[String], declared: &[String], out: &mut Vec<Change>) {
    let (old, new): (BTreeSet<&String>, BTreeSet<&String>) =
        (locked.iter().collect(), declared.iter().collect());
    for name in new.difference(&old) {
        push(out, Direction::Widened, format!("+ env.passthrough {name}"));
    }
    for name in old.difference(&new) {
        push(
            out,
            Direction::Narrowed,
            format!("- env.passthrough {name}"),
        );
    }
}

/// A secret added or changed (another host, rule or source) widens: the
/// value may go somewhere it could not; one removed narrows.
fn secret_changes(locked: &[String], declared: &[String], out: &mut Vec<Change>) {
    let (old, new): (BTreeSet<&String>, BTreeSet<&String>) =
        (locked.iter().collect(), declared.iter().collect());
    for line in new.difference(&old) {
        push(out, Direction::Widened, format!("+ {line}"));
    }
    for line in old.difference(&new) {
        push(out, Direction::Narrowed, format!("- {line}"));
    }
}

/// What one kind of TCP operation may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ports {
    Any,
    Only(BTreeSet<u16>),
}

impl fmt::Display for Ports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ports::Any => f.write_str("any port"),
            Ports::Only(set) if set.is_empty() => f.write_str("no port"),
            Ports::Only(set) => {
                let list: Vec<String> = set.iter().map(u16::to_string).collect();
                write!(f, "ports {}", list.join(", "))
            }
        }
    }
}

/// `(connect_tcp, bind_tcp)` of a network setting.
fn ports(network: &Network) -> (Ports, Ports) {
    match network {
        Network::Allow => (Ports::Any, Ports::Any),
        Network::Deny | Network::Hosts(_) => {
            (Ports::Only(BTreeSet::new()), Ports::Only(BTreeSet::new()))
        }
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => (
            Ports::Only(connect_tcp.iter().copied().collect()),
            Ports::Only(bind_tcp.iter().copied().collect()),
        ),
    }
}

fn network_changes(locked: &Network, declared: &Network, out: &mut Vec<Change>) {
    let (old_connect, old_bind) = ports(locked);
    let (new_connect, new_bind) = ports(declared);
    port_changes("connect_tcp", &old_connect, &new_connect, out);
    port_changes("bind_tcp", &old_bind, &new_bind, out);
    host_changes(&hosts(locked), &hosts(declared), out);
}

/// The names a setting lets children reach by name: `None` for any (with
/// `allow` a child connects anywhere), else the listed rules (`deny` and
/// port lists name none).
fn hosts(network: &Network) -> Option<BTreeSet<String>> {
    match network {
        Network::Allow => None,
        Network::Hosts(list) => Some(list.rules.iter().map(|r| r.to_string()).collect()),
        Network::Deny | Network::Ports { .. } => Some(BTreeSet::new()),
    }
}

/// Each added rule widens, each removed one narrows; a changed rule (a
/// port dropped from `github.com:443`) is both, so it is always reviewed.
fn host_changes(
    old: &Option<BTreeSet<String>>,
    new: &Option<BTreeSet<String>>,
    out: &mut Vec<Change>,
) {
    let (Some(old), Some(new)) = (old, new) else {
        return;
    };
    for rule in new.difference(old) {
        push(out, Direction::Widened, format!("+ network host {rule}"));
    }
    for rule in old.difference(new) {
        push(out, Direction::Narrowed, format!("- network host {rule}"));
    }
}

fn port_changes(kind: &str, old: &Ports, new: &Ports, out: &mut Vec<Change>) {
    match (old, new) {
        (Ports::Only(a), Ports::Only(b)) => {
            for port in b.difference(a) {
                push(out, Direction::Widened, format!("+ network {kind} {port}"));
            }
            for port in a.difference(b) {
                push(out, Direction::Narrowed, format!("- network {kind} {port}"));
            }
        }
        (Ports::Only(_), Ports::Any) => push(
            out,
            Direction::Widened,
            format!("~ network {kind}: {old} → {new}"),
        ),
        (Ports::Any, Ports::Only(_)) => push(
            out,
            Direction::Narrowed,
            format!("~ network {kind}: {old} → {new}"),
        ),
        (Ports::Any, Ports::Any) => {}
    }
}

/// A bound removed or raised widens (a runaway spell may take more); one
/// added or lowered narrows.
fn limit_changes(locked: &Limits, declared: &Limits, out: &mut Vec<Change>) {
    let secs = |l: &Limits| l.wall_time.map(|d| d.as_secs());
    let show_secs = |n: u64| Seconds(n).to_string();
    let show_bytes = |n: u64| Bytes(n).to_string();
    let count = |l: &Limits| l.processes.map(u64::from);
    bound_change("wall_time", secs(locked), secs(declared), show_secs, out);
    bound_change(
        "processes",
        count(locked),
        count(declared),
        |n| n.to_string(),
        out,
    );
    bound_change("memory", locked.memory, declared.memory, show_bytes, out);
}

fn bound_change(
    key: &str,
    old: Option<u64>,
    new: Option<u64>,
    show: impl Fn(u64) -> String,
    out: &mut Vec<Change>,
) {
    let (direction, text) = match (old, new) {
        (Some(a), Some(b)) if a == b => return,
        (None, None) => return,
        (Some(a), None) => (Direction::Widened, format!("- limits.{key} {}", show(a))),
        (None, Some(b)) => (Direction::Narrowed, format!("+ limits.{key} {}", show(b))),
        (Some(a), Some(b)) => {
            let direction = if b > a {
                Direction::Widened
            } else {
                Direction::Narrowed
            };
            (
                direction,
                format!("~ limits.{key}: {} → {}", show(a), show(b)),
            )
        }
    };
    push(out, direction, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[(&str, Mode)], passthrough: &[&str], network: Network) -> CanonicalPolicy {
        CanonicalPolicy {
            enabled: true,
            allow: allow.iter().map(|(p, m)| (p.to_string(), *m)).collect(),
            passthrough: passthrough.iter().map(|s| s.to_string()).collect(),
            network,
            limits: Limits::default(),
            secrets: Vec::new(),
        }
    }

    fn lines(changes: &[Change]) -> Vec<String> {
        changes.iter().map(Change::to_string).collect()
    }

    #[test]
    fn each_kind_of_change_is_named_and_classified() {
        let base = policy(&[("~/.cargo", Mode::Ro)], &["GOPATH"], Network::Deny);
        let ports = |c: &[u16], b: &[u16]| Network::Ports {
            connect_tcp: c.to_vec(),
            bind_tcp: b.to_vec(),
        };
        let cases: Vec<(&str, CanonicalPolicy, Vec<&str>)> = vec![
            ("unchanged", base.clone(), vec![]),
            (
                "entry added",
                policy(
                    &[("~/.cargo", Mode::Ro), ("~/.ssh", Mode::Rw)],
                    &["GOPATH"],
                    Network::Deny,
                ),
                vec!["widened: + allow ~/.ssh (rw)"],
            ),
            (
                "entry removed",
                policy(&[], &["GOPATH"], Network::Deny),
                vec!["narrowed: - allow ~/.cargo (ro)"],
            ),
            (
                "mode widened",
                policy(&[("~/.cargo", Mode::Rw)], &["GOPATH"], Network::Deny),
                vec!["widened: ~ allow ~/.cargo: ro → rw"],
            ),
            (
                "passthrough swapped",
                policy(&[("~/.cargo", Mode::Ro)], &["AWS_*"], Network::Deny),
                vec![
                    "widened: + env.passthrough AWS_*",
                    "narrowed: - env.passthrough GOPATH",
                ],
            ),
            (
                "network opened",
                policy(&[("~/.cargo", Mode::Ro)], &["GOPATH"], Network::Allow),
                vec![
                    "widened: ~ network connect_tcp: no port → any port",
                    "widened: ~ network bind_tcp: no port → any port",
                ],
            ),
            (
                "one port",
                policy(&[("~/.cargo", Mode::Ro)], &["GOPATH"], ports(&[443], &[])),
                vec!["widened: + network connect_tcp 443"],
            ),
        ];
        for (name, declared, want) in cases {
            assert_eq!(lines(&diff(&base, &declared)), want, "{name}");
        }
    }

    #[test]
    fn adding_a_host_widens_and_removing_one_narrows() {
        let hosts = |list: &[&str]| {
            Network::Hosts(crate::policy::HostList::of(
                list.iter()
                    .map(|h| crate::policy::HostRule::parse(h).unwrap())
                    .collect(),
            ))
        };
        let locked = policy(&[], &[], hosts(&["crates.io"]));
        let wider = policy(&[], &[], hosts(&["crates.io", "*.github.com:443"]));
        assert_eq!(
            lines(&diff(&locked, &wider)),
            ["widened: + network host *.github.com:443"]
        );
        assert_eq!(
            lines(&diff(&wider, &locked)),
            ["narrowed: - network host *.github.com:443"]
        );
        let deny = policy(&[], &[], Network::Deny);
        assert_eq!(
            lines(&diff(&deny, &locked)),
            ["widened: + network host crates.io"]
        );
        let allow = policy(&[], &[], Network::Allow);
        assert!(diff(&locked, &allow)
            .iter()
            .all(|c| c.direction == Direction::Widened));
        assert!(diff(&allow, &locked)
            .iter()
            .all(|c| c.direction == Direction::Narrowed));
    }

    #[test]
    fn narrowing_a_mode_and_closing_ports_narrow() {
        let locked = policy(
            &[("~/.cargo", Mode::Rw)],
            &[],
            Network::Ports {
                connect_tcp: vec![80, 443],
                bind_tcp: vec![],
            },
        );
        let declared = policy(
            &[("~/.cargo", Mode::Ro), ("~/.cargo", Mode::Ro)],
            &[],
            Network::Ports {
                connect_tcp: vec![443],
                bind_tcp: vec![],
            },
        );
        assert_eq!(
            lines(&diff(&locked, &declared)),
            [
                "narrowed: ~ allow ~/.cargo: rw → ro",
                "narrowed: - network connect_tcp 80"
            ]
        );
    }

    #[test]
    fn raising_or_removing_a_limit_widens() {
        let mut locked = policy(&[], &[], Network::Allow);
        locked.limits = Limits {
            wall_time: Some(std::time::Duration::from_secs(600)),
            processes: Some(64),
            memory: Some(1 << 30),
        };
        let mut declared = locked.clone();
        declared.limits.wall_time = Some(std::time::Duration::from_secs(7200));
        declared.limits.processes = None;
        declared.limits.memory = Some(512 << 20);
        assert_eq!(
            lines(&diff(&locked, &declared)),
            [
                "widened: ~ limits.wall_time: 10m → 2h",
                "widened: - limits.processes 64",
                "narrowed: ~ limits.memory: 1GiB → 512MiB",
            ]
        );
        assert_eq!(
            lines(&diff(&declared, &locked)),
            [
                "widened: ~ limits.memory: 512MiB → 1GiB",
                "narrowed: ~ limits.wall_time: 2h → 10m",
                "narrowed: + limits.processes 64",
            ]
        );
    }

    #[test]
    fn disabling_widens_and_the_greatest_mode_of_a_path_counts() {
        let mut locked = policy(&[("~/a", Mode::Ro), ("~/a", Mode::Rw)], &[], Network::Allow);
        let mut declared = policy(&[("~/a", Mode::Rw)], &[], Network::Allow);
        declared.enabled = false;
        assert_eq!(
            lines(&diff(&locked, &declared)),
            ["widened: ~ enabled: true → false"]
        );
        locked.enabled = false;
        declared.enabled = true;
        assert_eq!(
            lines(&diff(&locked, &declared)),
            ["narrowed: ~ enabled: false → true"]
        );
    }
}
