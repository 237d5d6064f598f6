//! The secret's request rules, and what a server could read otherwise:
//! a path it would resolve to another, a header or parameter that
//! overrides the method or path, a method or header that echoes the
//! value back. Checked on every request that carries a value.

use super::head::{exfiltration, percent_decoded};
use super::Refusal;
use crate::proxy::vault::{contains, Held};

/// The secret's rules, on the path without its query. Where rules exist,
/// a request a server could read as another is refused whatever its path
/// ([`ambiguous_path`]), and so is Symfony's and Laravel's `_method`
/// query parameter, which those frameworks act on instead of the method.
pub(super) fn check_rules(held: &Held, method: &str, path: &str) -> Result<(), Refusal> {
    let bare = path.split('?').next().unwrap_or(path);
    let query = path.split_once('?').map_or("", |(_, q)| q);
    let refused = match held.binding.refuses(method, bare) {
        Some(rules) => Some(rules),
        None if held.binding.rules.is_empty() => None,
        None if ambiguous_path(bare) || method_parameter(query) => Some(rules_text(held)),
        None => None,
    };
    match refused {
        None => Ok(()),
        Some(rules) => Err(Refusal::Rule {
            secret: held.binding.name.clone(),
            request: format!("{method} {bare}"),
            rules,
        }),
    }
}

fn rules_text(held: &Held) -> String {
    held.binding
        .rules
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Whether some server could resolve `path` (the request target before
/// its query) to another path than the one the rules were checked on:
/// the rules see the bytes as sent, while servers decode escapes, drop
/// `;params` from each segment and then remove dot segments (Tomcat and
/// Jetty read `/api/..;/admin` as `/admin`), take `\` for `/` (IIS,
/// some routers), trim trailing spaces and dots (Windows: `..%20`),
/// keep a `#` that no client sends as part of the path
/// (`/api/x#/../../admin`), or fold Unicode (a full-width `．`). So any
/// of these is refused where rules exist: a segment of dots alone (after
/// its params, decoded and trimmed), `\`, `#`, a byte outside printable
/// ASCII, a `%` without two hex digits after it, and an escape for `.`,
/// `/`, `\`, `;`, `%` (double encoding), a control character or a
/// non-ASCII byte.
fn ambiguous_path(path: &str) -> bool {
    let dot_segment = path
        .split('/')
        .map(|s| s.split(';').next().unwrap_or(s))
        .any(dots_only);
    let odd_byte = path
        .bytes()
        .any(|b| b == b'\\' || b == b'#' || !(0x21..0x7f).contains(&b));
    dot_segment || odd_byte || escapes(path.as_bytes()).any(|b| !plain_escape(b))
}

/// Whether a path segment (its params dropped) is dots alone once
/// decoded and trimmed: `.`, `..`, and what Windows servers trim to them
/// (`..%20`, `...`).
fn dots_only(segment: &str) -> bool {
    let decoded = percent_decoded(segment.as_bytes());
    let trimmed = decoded.trim_ascii();
    !trimmed.is_empty() && trimmed.iter().all(|&b| b == b'.')
}

/// The bytes `path`'s escapes stand for; a `%` not followed by two hex
/// digits (`%%32%65`, which decodes to `%2e` and then to `.`) stands
/// for `%`, which [`plain_escape`] refuses.
fn escapes(path: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
    let at = path.iter().enumerate().filter(|(_, &b)| b == b'%');
    at.map(
        move |(i, _)| match (hex(path.get(i + 1)), hex(path.get(i + 2))) {
            (Some(h), Some(l)) => u8::try_from(h * 16 + l).unwrap_or(b'%'),
            _ => b'%',
        },
    )
}

/// An escaped byte every server reads as that one character of a path
/// segment (a space, `?`, `@`...).
fn plain_escape(byte: u8) -> bool {
    (0x20..0x7f).contains(&byte) && !b"./\\;%#".contains(&byte)
}

/// Whether a query string has a `_method` parameter (its name escaped or
/// not, any case).
fn method_parameter(query: &str) -> bool {
    query.split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or(pair);
        percent_decoded(name.as_bytes()).eq_ignore_ascii_case(b"_method")
    })
}

/// Headers some servers act on instead of the request line's method or
/// path (method override for clients that can only send GET and POST;
/// the URL a front end rewrote from, trusted by IIS, Symfony and Zend),
/// or instead of `Host` (the site a shared front end serves), or that
/// prefix the path (`X-Forwarded-Prefix`, trusted by Spring and
/// Symfony). Legitimate API clients do not send them with a token.
const OVERRIDING: [&str; 16] = [
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "x-original-method",
    "x-original-url",
    "x-original-uri",
    "x-rewrite-url",
    "x-forwarded-uri",
    "x-forwarded-prefix",
    "x-forwarded-path",
    "x-forwarded-host",
    "x-forwarded-server",
    "x-original-host",
    "x-http-host-override",
    "x-host",
    "forwarded",
];

/// Whether `name` is one of [`OVERRIDING`], spelled with `-` or `_` (a
/// CGI-style gateway gives both to the application as the same variable).
pub(super) fn overriding(name: &str) -> bool {
    let name = name.replace('_', "-");
    OVERRIDING.iter().any(|o| name.eq_ignore_ascii_case(o))
}

/// A request that carries the secret's value and a header in
/// [`OVERRIDING`] is refused: the host could act on another method, path
/// or site than the rules and the binding were checked on.
pub(super) fn check_overrides(
    held: &Held,
    method: &str,
    path: &str,
    overrides: &[&str],
) -> Result<(), Refusal> {
    let Some(name) = overrides.first() else {
        return Ok(());
    };
    let bare = path.split('?').next().unwrap_or(path);
    let rules = match held.binding.rules.is_empty() {
        true => "its own method, path and host".to_string(),
        false => rules_text(held),
    };
    Err(Refusal::Rule {
        secret: held.binding.name.clone(),
        request: format!("{method} {bare} with `{name}`"),
        rules,
    })
}

/// Headers whose value hosts commonly send back in the response (CORS
/// reflects `Origin` and `Access-Control-Request-*`; request-id and
/// tracing middlewares echo their ids; error pages and logs the caller
/// can read quote `User-Agent`, `Referer`, the content type, ranges and
/// validators; forwarding headers are logged and echoed), or that are
/// standard and never carry a credential. The placeholder in one of them
/// is refused rather than replaced: the value would come back to the
/// spell. A credential belongs in `Authorization`, `Cookie`, or an API's
/// own header.
const ECHOED: [&str; 28] = [
    "origin",
    "referer",
    "user-agent",
    "from",
    "access-control-request-method",
    "access-control-request-headers",
    "x-request-id",
    "x-correlation-id",
    "request-id",
    "correlation-id",
    "x-amzn-trace-id",
    "x-cloud-trace-context",
    "traceparent",
    "tracestate",
    "baggage",
    "accept",
    "accept-language",
    "accept-encoding",
    "accept-charset",
    "content-type",
    "content-language",
    "range",
    "if-match",
    "if-none-match",
    "if-range",
    "x-forwarded-for",
    "x-real-ip",
    "via",
];

/// The value may not go where the host sends it back: in a header of
/// [`ECHOED`] (or one that reads as such a header: `X_Request_Id`), or
/// in a `TRACE` or `TRACK` request, which a host that allows it answers
/// with the whole request head, `Authorization` included.
pub(super) fn check_echoes(
    held: &Held,
    method: &str,
    request: &httparse::Request<'_, '_>,
) -> Result<(), Refusal> {
    if method.eq_ignore_ascii_case("TRACE") || method.eq_ignore_ascii_case("TRACK") {
        let why = format!(
            "would go in a `{method}` request, which hosts answer with the request's headers"
        );
        return Err(exfiltration(held, &why));
    }
    let placeholder = held.placeholder.as_bytes();
    let echoed = request.headers.iter().find(|h| {
        let name = h.name.replace('_', "-");
        ECHOED.iter().any(|e| name.eq_ignore_ascii_case(e)) && contains(h.value, placeholder)
    });
    match echoed {
        Some(h) => Err(exfiltration(
            held,
            &format!("was in the `{}` header, which hosts send back in their responses; a secret goes in `Authorization`, `Cookie` or a header of the API's own", h.name),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::head::rewrite;
    use super::super::Refusal;
    use crate::policy::secrets::{PathRule, RequestRule};
    use crate::proxy::test_support::{head, target, vault, VALUE};
    use crate::proxy::vault::contains;

    #[test]
    fn rules_refuse_other_methods_paths_and_dot_segments() {
        let rule = RequestRule {
            methods: vec!["GET".into()],
            paths: vec![PathRule::Glob("/repos/o/n/releases*".into())],
        };
        let v = vault(vec![rule], None);
        let auth = "Authorization: token PH";
        assert!(rewrite(&v, &target(), &head(&v, "/repos/o/n/releases/1?x=2", auth)).is_ok());
        for path in [
            "/user",
            "/repos/o/n/releases/../../../user",
            "/repos/o/n/releases%2f..%2f",
        ] {
            let r = rewrite(&v, &target(), &head(&v, path, auth));
            assert!(matches!(r, Err(Refusal::Rule { .. })), "{path}: {r:?}");
        }
        // Without the placeholder the rules do not apply: nothing is
        // replaced, so the host gets nothing of the secret's.
        assert!(rewrite(&v, &target(), &head(&v, "/user", "X: y")).is_ok());
    }

    /// Paths inside the rules as written that a lenient server resolves
    /// elsewhere (Tomcat's `..;`, IIS's `\`, a literal `#`, double or
    /// overlong encodings, Unicode dots) and Symfony's `_method`.
    #[test]
    fn rules_refuse_paths_a_server_could_read_as_another() {
        let rule = RequestRule {
            methods: vec!["GET".into()],
            paths: vec![PathRule::Glob("/api/*".into())],
        };
        let v = vault(vec![rule], None);
        let auth = "Authorization: token PH";
        for path in [
            "/api/x",
            "/api/x;v=1",
            "/api/a%20b?q=%2e%2e/..&x=1",
            "/api/a%3Fb",
            "/api/..x/.y",
        ] {
            let r = rewrite(&v, &target(), &head(&v, path, auth));
            assert!(r.is_ok(), "{path}: {r:?}");
        }
        for path in [
            "/api/..;/admin",
            "/api/.;x/x",
            "/api/x/..;jsessionid=1/..;/admin",
            "/api/\\..\\admin",
            "/api/x#/../../admin",
            "/api/%252e%252e/admin",
            "/api/%%32%65%%32%65/admin",
            "/api/x%",
            "/api/..%20/admin",
            "/api/x/.../admin",
            "/api/%c0%ae%c0%ae/admin",
            "/api/%3b/x",
            "/api/%00/x",
            "/api/\u{ff0e}\u{ff0e}/admin",
            "/api/x?_method=DELETE",
            "/api/x?a=1&%5Fmethod=DELETE",
        ] {
            let r = rewrite(&v, &target(), &head(&v, path, auth));
            assert!(matches!(r, Err(Refusal::Rule { .. })), "{path}: {r:?}");
        }
    }

    #[test]
    fn override_headers_trace_and_echoed_headers_are_refused_with_the_value() {
        let rule = RequestRule {
            methods: vec!["GET".into(), "POST".into()],
            paths: Vec::new(),
        };
        let v = vault(vec![rule], None);
        for header in [
            "X-HTTP-Method-Override: DELETE",
            "x-original-url: /admin",
            "X_HTTP_Method_Override: DELETE",
            "X-Forwarded-Host: other.example",
            "X-Original-Host: other.example",
            "X-HTTP-Host-Override: other.example",
            "X-Forwarded-Prefix: /admin",
        ] {
            let h = format!("Authorization: Bearer PH\r\n{header}");
            let r = rewrite(&v, &target(), &head(&v, "/", &h));
            assert!(matches!(r, Err(Refusal::Rule { .. })), "{header}: {r:?}");
            // Without the value the header is the host's business.
            assert!(rewrite(&v, &target(), &head(&v, "/", header)).is_ok());
        }
        let open = vault(Vec::new(), None);
        let trace = format!(
            "TRACE / HTTP/1.1\r\nAuthorization: Bearer {}\r\n\r\n",
            open.secrets[0].placeholder
        );
        let r = rewrite(&open, &target(), trace.as_bytes());
        assert!(matches!(r, Err(Refusal::Exfiltration { .. })), "{r:?}");
        for header in [
            "Origin: https://PH",
            "X-Request-Id: PH",
            "X_Request_Id: PH",
            "User-Agent: PH",
            "Access-Control-Request-Headers: PH",
        ] {
            let h = format!("Authorization: Bearer PH\r\n{header}");
            let r = rewrite(&open, &target(), &head(&open, "/", &h));
            assert!(
                matches!(r, Err(Refusal::Exfiltration { .. })),
                "{header}: {r:?}"
            );
        }
        // An API's own header, and a cookie, still get the value.
        for header in ["X-Api-Key: PH", "PRIVATE-TOKEN: PH", "Cookie: s=PH"] {
            let r = rewrite(&open, &target(), &head(&open, "/", header)).expect(header);
            assert!(contains(&r.head, VALUE), "{header}");
        }
    }
}
