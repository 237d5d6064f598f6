//! What the proxy process tells magus, one JSON line per event over their
//! socket pair: a refusal (for MGS2011, said after the `sh.*` call that
//! caused it), a finished connection (for the egress summary), a client
//! turned away because the proxy was serving all it may at once, and
//! (from the process that should have forked it) a proxy never started.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Why the proxy refused a request; each names its own fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// The name (or IP literal) matches no `hosts:` entry.
    NotListed,
    /// The name is listed, but only for other ports.
    PortNotListed,
    /// A listed name resolved only to loopback, private, link-local or
    /// otherwise non-public addresses (the DNS-rebinding rule).
    PrivateAddress,
}

/// The rule a listed name broke, said after where it led.
pub(crate) const REBINDING_RULE: &str =
    "a listed name may not lead to a private or reserved address, by the DNS-rebinding rule";

impl RefusalReason {
    /// One line, for the HTTP 403 body and MGS2011's note; for
    /// [`RefusalReason::PrivateAddress`], [`rebinding_text`] says more.
    pub fn text(self) -> &'static str {
        match self {
            RefusalReason::NotListed => "the host is not in network.hosts",
            RefusalReason::PortNotListed => "the host is listed for other ports only",
            RefusalReason::PrivateAddress => {
                "the name resolves to a loopback, private or this machine's own address (DNS-rebinding rule)"
            }
        }
    }
}

/// An address a listed name resolved to, and why the proxy would not
/// connect to it (`in 198.18.0.0/15 (benchmarking, reserved)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    pub address: IpAddr,
    pub why: String,
}

/// How many resolved addresses a message names; a name with more says
/// how many it left out.
const ADDRESSES_SAID: usize = 4;

/// `` `reg.example` resolved to 198.18.0.5, in 198.18.0.0/15
/// (benchmarking, reserved): a listed name may not lead to ... ``.
pub(crate) fn rebinding_text(host: &str, resolved: &[Resolved]) -> String {
    if resolved.is_empty() {
        return RefusalReason::PrivateAddress.text().to_string();
    }
    let mut each: Vec<String> = resolved
        .iter()
        .take(ADDRESSES_SAID)
        .map(|r| format!("{}, {}", r.address, r.why))
        .collect();
    if resolved.len() > ADDRESSES_SAID {
        each.push(format!("{} more", resolved.len() - ADDRESSES_SAID));
    }
    format!(
        "`{host}` resolved to {}: {REBINDING_RULE}",
        each.join("; and to ")
    )
}

/// One line of the proxy's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Refused {
        host: String,
        port: u16,
        reason: RefusalReason,
        /// `http` or `socks5`.
        via: String,
        /// For [`RefusalReason::PrivateAddress`]: every address the name
        /// resolved to, and why each was barred.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        resolved: Vec<Resolved>,
    },
    Closed {
        host: String,
        port: u16,
        /// Bytes from the child to the host, and back.
        sent: u64,
        received: u64,
    },
    /// A client was answered "busy" and closed before anything was read:
    /// the proxy was serving [`MAX_CLIENTS`](super::MAX_CLIENTS) at once.
    TurnedAway,
    /// A request carrying a secret's placeholder where its value may not
    /// go, or breaking the secret's rules (MGS2013). Never the value.
    SecretRefused {
        host: String,
        port: u16,
        /// The secret's name (the variable).
        secret: String,
        why: String,
        /// For a rule refusal: the rules, as written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rules: Option<String>,
    },
    /// The proxy has stopped; nothing follows.
    End,
    /// The proxy could not be forked (written by the original process in
    /// its stead): children's connections to its listeners are refused.
    NotStarted { reason: String },
}

impl Event {
    /// Whether magus says it to the user when it arrives (the rest only
    /// counts in the egress summary).
    pub fn is_said(&self) -> bool {
        matches!(
            self,
            Event::Refused { .. } | Event::NotStarted { .. } | Event::SecretRefused { .. }
        )
    }
}

/// Per host and port: what went out and came back during one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Egress {
    pub connections: u64,
    pub sent: u64,
    pub received: u64,
    pub refused: u64,
}

/// The egress of a whole run, keyed by `(host, port)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressSummary {
    pub by_destination: BTreeMap<(String, u16), Egress>,
    /// Clients answered "busy" (no destination is known for them).
    pub turned_away: u64,
}

impl EgressSummary {
    /// Counts one event.
    pub fn record(&mut self, event: &Event) {
        match event {
            Event::Refused { host, port, .. } | Event::SecretRefused { host, port, .. } => {
                self.slot(host, *port).refused += 1
            }
            Event::Closed {
                host,
                port,
                sent,
                received,
            } => {
                let slot = self.slot(host, *port);
                slot.connections += 1;
                slot.sent += sent;
                slot.received += received;
            }
            Event::TurnedAway => self.turned_away += 1,
            Event::End | Event::NotStarted { .. } => {}
        }
    }

    fn slot(&mut self, host: &str, port: u16) -> &mut Egress {
        self.by_destination
            .entry((host.to_string(), port))
            .or_default()
    }

    /// One line per destination: `localhost:8080  2 connections, 120 B out, 4096 B in, 1 refused`.
    pub fn lines(&self) -> Vec<String> {
        self.by_destination
            .iter()
            .map(|((host, port), e)| {
                format!(
                    "{host}:{port}  {} connection(s), {} B out, {} B in, {} refused",
                    e.connections, e.sent, e.received, e.refused
                )
            })
            .collect()
    }

    /// The summary as JSON: a list of `{host, port, connections, sent, received, refused}`
    /// (the clients turned away are counted beside it, [`Self::turned_away`]).
    pub fn to_json(&self) -> serde_json::Value {
        let rows = self.by_destination.iter().map(|((host, port), e)| {
            serde_json::json!({
                "host": host,
                "port": port,
                "connections": e.connections,
                "sent": e.sent,
                "received": e.received,
                "refused": e.refused,
            })
        });
        serde_json::Value::Array(rows.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_add_up() {
        let events = [
            Event::Closed {
                host: "localhost".into(),
                port: 80,
                sent: 10,
                received: 100,
            },
            Event::Closed {
                host: "localhost".into(),
                port: 80,
                sent: 1,
                received: 2,
            },
            Event::Refused {
                host: "127.0.0.1".into(),
                port: 80,
                reason: RefusalReason::NotListed,
                via: "http".into(),
                resolved: Vec::new(),
            },
            Event::Refused {
                host: "reg.example".into(),
                port: 443,
                reason: RefusalReason::PrivateAddress,
                via: "socks5".into(),
                resolved: vec![Resolved {
                    address: "198.18.0.5".parse().unwrap(),
                    why: "in 198.18.0.0/15 (benchmarking, reserved)".into(),
                }],
            },
            Event::TurnedAway,
            Event::TurnedAway,
        ];
        let mut summary = EgressSummary::default();
        for e in &events {
            let line = serde_json::to_string(e).unwrap();
            let back: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(&back, e);
            summary.record(&back);
        }
        assert_eq!(
            summary.lines(),
            [
                "127.0.0.1:80  0 connection(s), 0 B out, 0 B in, 1 refused",
                "localhost:80  2 connection(s), 11 B out, 102 B in, 0 refused",
                "reg.example:443  0 connection(s), 0 B out, 0 B in, 1 refused"
            ]
        );
        assert_eq!(summary.turned_away, 2);
    }

    #[test]
    fn a_rebinding_refusal_says_where_the_name_led() {
        let at = |a: &str, why: &str| Resolved {
            address: a.parse().unwrap(),
            why: why.into(),
        };
        assert_eq!(
            rebinding_text(
                "reg.example",
                &[at("198.18.0.5", "in 198.18.0.0/15 (benchmarking, reserved)")]
            ),
            "`reg.example` resolved to 198.18.0.5, in 198.18.0.0/15 (benchmarking, reserved): \
             a listed name may not lead to a private or reserved address, by the DNS-rebinding rule"
        );
        let many: Vec<Resolved> = (1..=6)
            .map(|i| at(&format!("10.0.0.{i}"), "in 10.0.0.0/8 (private)"))
            .collect();
        let text = rebinding_text("reg.example", &many);
        assert!(
            text.starts_with(
                "`reg.example` resolved to 10.0.0.1, in 10.0.0.0/8 (private); and to 10.0.0.2"
            ),
            "{text}"
        );
        assert!(
            text.contains("10.0.0.4, in 10.0.0.0/8 (private); and to 2 more:"),
            "{text}"
        );
    }
}
