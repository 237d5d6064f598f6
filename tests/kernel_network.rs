//! `network:` through the real `magus` binary: a child's TCP connect to a
//! listener on 127.0.0.1 fails under `network: deny`, succeeds under the
//! default `allow`, and a port list admits exactly its ports.

mod support;

use std::net::TcpListener;
use support::Harness;

/// A spell whose child connects to 127.0.0.1:PORT and prints the outcome.
fn connect_spell(port: u16) -> String {
    let script = format!(
        "import socket; s = socket.socket(); s.settimeout(5); \
         r = s.connect_ex(('127.0.0.1', {port})); \
         print('connected' if r == 0 else 'refused %d' % r)"
    );
    format!(
        "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {{\n    final out = sh.output([\"/usr/bin/python3\", \"-c\", {}]);\n    std.print(out.stdout.trim());\n    return out.status;\n}}\n",
        support::buzz_str(script)
    )
}

fn outcome(network: &str, port: u16) -> String {
    let h = Harness::with_config(&format!(
        "sandbox:\n  enabled: true\n  network: {network}\n"
    ));
    h.write_spell("net", &connect_spell(port));
    let out = h.run("net", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    out.stdout.trim().to_string()
}

#[test]
fn deny_refuses_a_loopback_connect_and_allow_permits_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cases = [
        ("allow", "connected"),
        ("deny", "refused 111"),
        (
            &format!("{{connect_tcp: [{port}], bind_tcp: []}}") as &str,
            "connected",
        ),
        ("{connect_tcp: [1], bind_tcp: []}", "refused 13"),
    ];
    for (network, want) in cases {
        assert_eq!(outcome(network, port), want, "network: {network}");
    }
}
