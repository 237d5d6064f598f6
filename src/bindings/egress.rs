//! What the host-filtering proxy reports, said to the user: MGS2011 for a
//! refused host (pointing at the `sh.*` call whose child asked for it,
//! once per host, port and reason however often the client retried), and
//! the run's egress summary.

use crate::buzz::CallSite;
use crate::diag::{Code, Diagnostic, Location, SourceKind};
use crate::policy::HostList;
use crate::proxy::{rebinding_text, EgressSummary, Event, RefusalReason, Resolved, MAX_CLIENTS};

/// What to say of the events the proxy reported during one `sh.*` call
/// (or, with `site` `None`, after the spell ended): one MGS2011 per host,
/// port and reason, however often a client retried ("refused 7 times"),
/// in the order first refused; an error for a proxy that could not be
/// started.
pub(crate) fn diagnostics(events: &[Event], site: Option<&CallSite>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut refusals: Vec<Refusals> = Vec::new();
    for event in events {
        match event {
            Event::NotStarted { reason } => out.push(not_started(reason)),
            Event::SecretRefused {
                host,
                port,
                secret,
                why,
                rules,
            } => {
                let d = secret_refused(host, *port, secret, why, rules.as_deref(), site);
                if !out
                    .iter()
                    .any(|o| o.message == d.message && o.notes == d.notes)
                {
                    out.push(d);
                }
            }
            Event::Refused {
                host,
                port,
                reason,
                via,
                resolved,
            } => match refusals.iter_mut().find(|r| r.is(host, *port, *reason)) {
                Some(group) => group.add(via, resolved),
                None => refusals.push(Refusals::first(host, *port, *reason, via, resolved)),
            },
            _ => {}
        }
    }
    out.extend(refusals.iter().map(|r| r.diagnostic(site)));
    out
}

/// What to say of one event ([`diagnostics`] of it alone).
#[cfg(test)]
pub(crate) fn event_diagnostic(event: &Event, site: Option<&CallSite>) -> Option<Diagnostic> {
    diagnostics(std::slice::from_ref(event), site).pop()
}

/// The refusals of one host, port and reason.
struct Refusals {
    host: String,
    port: u16,
    reason: RefusalReason,
    count: usize,
    /// `http`, `socks5`: each way they were asked for, once.
    via: Vec<String>,
    /// Every address the name led to, once.
    resolved: Vec<Resolved>,
}

impl Refusals {
    fn first(
        host: &str,
        port: u16,
        reason: RefusalReason,
        via: &str,
        resolved: &[Resolved],
    ) -> Refusals {
        let mut group = Refusals {
            host: host.to_string(),
            port,
            reason,
            count: 0,
            via: Vec::new(),
            resolved: Vec::new(),
        };
        group.add(via, resolved);
        group
    }

    fn is(&self, host: &str, port: u16, reason: RefusalReason) -> bool {
        self.host == host && self.port == port && self.reason == reason
    }

    fn add(&mut self, via: &str, resolved: &[Resolved]) {
        self.count += 1;
        if !self.via.iter().any(|v| v == via) {
            self.via.push(via.to_string());
        }
        for r in resolved {
            if !self.resolved.iter().any(|seen| seen.address == r.address) {
                self.resolved.push(r.clone());
            }
        }
    }

    fn diagnostic(&self, site: Option<&CallSite>) -> Diagnostic {
        let (host, port) = (&self.host, self.port);
        let times = match self.count {
            1 => String::new(),
            n => format!(" {n} times"),
        };
        let why = match self.reason {
            RefusalReason::PrivateAddress => rebinding_text(host, &self.resolved),
            other => other.text().to_string(),
        };
        let d = Diagnostic::warning(format!(
            "connection to `{host}:{port}` refused{times} by the sandbox's network proxy"
        ))
        .with_code(Code::Mgs2011)
        .with_note(format!("{why} (asked through {})", self.via_text()))
        .with_help(self.fix());
        at_site(d, site, "the program started here asked for it")
    }

    /// `the HTTP proxy`, `the HTTP and SOCKS5 proxies`.
    fn via_text(&self) -> String {
        let names: Vec<&str> = self
            .via
            .iter()
            .map(|v| match v.as_str() {
                "socks5" => "SOCKS5",
                _ => "HTTP",
            })
            .collect();
        match names.as_slice() {
            [one] => format!("the {one} proxy"),
            many => format!("the {} proxies", many.join(" and ")),
        }
    }

    fn fix(&self) -> String {
        let (host, port) = (self.host.as_str(), self.port);
        if self.reason != RefusalReason::PrivateAddress {
            let entry = HostList::entry_to_add(host, port);
            return format!(
                "to allow it, add to magus.yaml (only if you trust this spell with it):\n{YAML_HOSTS}      - {entry}"
            );
        }
        let lines: String = match self.resolved.as_slice() {
            [] => format!("      - \"<its IP address>:{port}\"\n"),
            resolved => resolved
                .iter()
                .map(|r| {
                    let entry = HostList::entry_to_add(&r.address.to_string(), port);
                    format!("      - {entry}\n")
                })
                .collect(),
        };
        format!(
            "if `{host}` really is at that address (a registry on your network, a mirror), \
             list the address beside the name (only if you trust this spell with it):\n{YAML_HOSTS}{}",
            lines.trim_end()
        )
    }
}

/// MGS2013: a secret's placeholder on its way where its value may not go,
/// or a request to a bound host outside the secret's rules. Never the
/// value (the event carries none).
fn secret_refused(
    host: &str,
    port: u16,
    secret: &str,
    why: &str,
    rules: Option<&str>,
    site: Option<&CallSite>,
) -> Diagnostic {
    let (message, help) = match rules {
        Some(rules) => (
            format!("a request to `{host}:{port}` with the secret `{secret}` was refused: it breaks the secret's rules"),
            format!("the secret's rules allow only {rules}; widen its `rules:` in magus.yaml only if the spell needs this request"),
        ),
        None => (
            format!("a request to `{host}:{port}` carrying the placeholder of the secret `{secret}` was refused (exfiltration attempt)"),
            "if this host should receive the secret, add it to the secret's `hosts:` in magus.yaml; otherwise find what in the spell sends it there".to_string(),
        ),
    };
    let note = match rules {
        Some(_) => why.to_string(),
        None => format!("the placeholder {why}"),
    };
    let d = Diagnostic::warning(message)
        .with_code(Code::Mgs2013)
        .with_note(note)
        .with_help(help);
    at_site(d, site, "the program started here sent it")
}

/// The lines of `magus.yaml` above a `hosts:` entry.
const YAML_HOSTS: &str = "sandbox:\n  network:\n    hosts:\n";

fn not_started(reason: &str) -> Diagnostic {
    Diagnostic::error(format!("cannot start the network proxy: {reason}")).with_note(
        "the spell's programs could reach no host: their connections to the proxy were refused",
    )
}

/// The egress summary as a note: one line per host and port.
pub(crate) fn summary_diagnostic(summary: &EgressSummary) -> Diagnostic {
    let lines = summary.lines();
    let mut d = Diagnostic::note(match lines.len() {
        0 => "network egress: no connection through the proxy".to_string(),
        n => format!("network egress through the proxy: {n} destination(s)"),
    });
    for line in lines {
        d = d.with_note(line);
    }
    d
}

/// Said after every run in which the proxy turned clients away, whatever
/// the verbosity: those children's downloads failed for a reason of the
/// proxy's, not of the host's.
pub(crate) fn turned_away_diagnostic(summary: &EgressSummary) -> Option<Diagnostic> {
    let n = summary.turned_away;
    (n > 0).then(|| {
        Diagnostic::warning(format!(
            "the network proxy turned {n} connection(s) away: it serves at most {MAX_CLIENTS} at once"
        ))
        .with_note("each was answered \"503 Service Unavailable\" (HTTP) or \"no acceptable method\" (SOCKS5) and closed")
        .with_help("a program that holds many idle connections open (a crawler, a leak) keeps others out; let it close them")
    })
}

/// `d` pointed at the spell line that started the program, when known.
fn at_site(d: Diagnostic, site: Option<&CallSite>, label: &str) -> Diagnostic {
    let Some(site) = site else {
        return d;
    };
    d.with_location(Location {
        kind: SourceKind::Spell,
        file: site.file.clone(),
        line: site.line,
        column: site.column,
    })
    .with_label(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(host: &str, port: u16, reason: RefusalReason, via: &str) -> Event {
        Event::Refused {
            host: host.into(),
            port,
            reason,
            via: via.into(),
            resolved: Vec::new(),
        }
    }

    /// Retries of one host, port and reason are one diagnostic with their
    /// count; another port, host or reason is another, in the order each
    /// was first refused.
    #[test]
    fn repeated_refusals_are_one_diagnostic_with_a_count() {
        use RefusalReason::{NotListed, PortNotListed};
        let mut events = vec![refused("a.example", 443, NotListed, "http"); 7];
        events.insert(2, refused("b.example", 443, NotListed, "socks5"));
        events.push(refused("a.example", 443, NotListed, "socks5"));
        events.push(refused("a.example", 80, PortNotListed, "http"));
        events.push(Event::TurnedAway);
        let said: Vec<(String, Vec<String>)> = diagnostics(&events, None)
            .into_iter()
            .map(|d| (d.message, d.notes))
            .collect();
        assert_eq!(said.len(), 3, "{said:#?}");
        assert_eq!(
            said[0].0,
            "connection to `a.example:443` refused 8 times by the sandbox's network proxy"
        );
        assert!(
            said[0].1[0].ends_with("(asked through the HTTP and SOCKS5 proxies)"),
            "{said:#?}"
        );
        assert_eq!(
            said[1].0,
            "connection to `b.example:443` refused by the sandbox's network proxy"
        );
        assert!(said[2]
            .0
            .starts_with("connection to `a.example:80` refused by"));
    }

    /// A rebinding refusal names every address the name led to, once, and
    /// offers each as the entry to add.
    #[test]
    fn a_rebinding_refusal_offers_the_addresses_it_led_to() {
        let at = |a: &str| Resolved {
            address: a.parse().unwrap(),
            why: "in 10.0.0.0/8 (private)".into(),
        };
        let event = |addrs: Vec<Resolved>| Event::Refused {
            host: "registry.corp".into(),
            port: 8443,
            reason: RefusalReason::PrivateAddress,
            via: "http".into(),
            resolved: addrs,
        };
        let events = [
            event(vec![at("10.0.0.5")]),
            event(vec![at("10.0.0.6"), at("10.0.0.5")]),
        ];
        let all = diagnostics(&events, None);
        assert_eq!(all.len(), 1);
        let help = all[0].help.clone().unwrap_or_default();
        assert!(
            help.ends_with("      - \"10.0.0.5:8443\"\n      - \"10.0.0.6:8443\""),
            "{help}"
        );
        assert_eq!(
            all[0].notes[0].matches("10.0.0.5").count(),
            1,
            "{:?}",
            all[0].notes
        );
    }
}
