//! What the host-filtering proxy reports, said to the user: MGS2011 for a
//! refused host (pointing at the `sh.*` call whose child asked for it),
//! and the run's egress summary.

use crate::buzz::CallSite;
use crate::diag::{Code, Diagnostic, Location, SourceKind};
use crate::enforce::proxy::{EgressSummary, Event, RefusalReason, MAX_CLIENTS};
use crate::policy::HostList;

/// What to say of one event the proxy reported ([`Event::is_said`]):
/// MGS2011 for a refusal, an error for a proxy that could not be started.
/// `site` is the `sh.*` call that was running (`None` when the event came
/// from a child still running at the end).
pub fn event_diagnostic(event: &Event, site: Option<&CallSite>) -> Option<Diagnostic> {
    if let Event::NotStarted { reason } = event {
        return Some(not_started(reason));
    }
    let Event::Refused {
        host,
        port,
        reason,
        via,
    } = event
    else {
        return None;
    };
    let via = match via.as_str() {
        "socks5" => "the SOCKS5 proxy",
        _ => "the HTTP proxy",
    };
    let mut d = Diagnostic::warning(format!(
        "connection to `{host}:{port}` refused by the sandbox's network proxy"
    ))
    .with_code(Code::Mgs2011)
    .with_note(format!("{} (asked through {via})", reason.text()))
    .with_help(fix(host, *port, *reason));
    if let Some(site) = site {
        d = d
            .with_location(Location {
                kind: SourceKind::Spell,
                file: site.file.clone(),
                line: site.line,
                column: site.column,
            })
            .with_label("the program started here asked for it");
    }
    Some(d)
}

fn not_started(reason: &str) -> Diagnostic {
    Diagnostic::error(format!("cannot start the network proxy: {reason}")).with_note(
        "the spell's programs could reach no host: their connections to the proxy were refused",
    )
}

fn fix(host: &str, port: u16, reason: RefusalReason) -> String {
    let entry = HostList::entry_to_add(host, port);
    match reason {
        RefusalReason::PrivateAddress => format!(
            "if this host really lives on this machine or your network, list its address too \
             (only if you trust this spell with it):\nsandbox:\n  network:\n    hosts:\n      - {entry}\n      - \"<its IP address>:{port}\""
        ),
        RefusalReason::NotListed | RefusalReason::PortNotListed => format!(
            "to allow it, add to magus.yaml (only if you trust this spell with it):\nsandbox:\n  network:\n    hosts:\n      - {entry}"
        ),
    }
}

/// The egress summary as a note: one line per host and port.
pub fn summary_diagnostic(summary: &EgressSummary) -> Diagnostic {
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
pub fn turned_away_diagnostic(summary: &EgressSummary) -> Option<Diagnostic> {
    let n = summary.turned_away;
    (n > 0).then(|| {
        Diagnostic::warning(format!(
            "the network proxy turned {n} connection(s) away: it serves at most {MAX_CLIENTS} at once"
        ))
        .with_note("each was answered \"503 Service Unavailable\" (HTTP) or \"no acceptable method\" (SOCKS5) and closed")
        .with_help("a program that holds many idle connections open (a crawler, a leak) keeps others out; let it close them")
    })
}
