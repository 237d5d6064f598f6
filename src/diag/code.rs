//! The stable diagnostic codes: the spell checker's and the interpreter's
//! (MGS1001–MGS1026) and the sandbox's (MGS2001–MGS2008,
//! MGS2010–MGS2014), and
//! the workspace's and `magus.yaml`'s (MGS3001–MGS3008).
//!
//! A code names one kind of event the user may need to act on; its page in
//! `docs/` (embedded for `magus explain`) says what it means and how to fix
//! it. Codes are never reused for something else.

use std::fmt;
use std::str::FromStr;

/// One sandbox diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Code {
    /// A name that nothing in scope declares.
    Mgs1001,
    /// A module member, field, method or enum case that does not exist.
    Mgs1002,
    /// A call with too many, too few or misnamed arguments.
    Mgs1003,
    /// An assignment to a `final` variable, a parameter or an enum case.
    Mgs1004,
    /// A list or map that is not `mut` is changed.
    Mgs1005,
    /// A value of one type where another is expected.
    Mgs1006,
    /// An optional value used as if it could not be null.
    Mgs1007,
    /// A statement that can never run.
    Mgs1008,
    /// A function that may end without returning its value.
    Mgs1009,
    /// `main` declared with a signature magus cannot call.
    Mgs1010,
    /// An `import` that cannot be resolved.
    Mgs1011,
    /// A value that is not a function is called.
    Mgs1012,
    /// `break`, `continue` or `out` outside what they leave, or an unknown label.
    Mgs1013,
    /// A `match` that no arm may fit and that has no `else`.
    Mgs1014,
    /// A local declared again inside a block where it is already visible.
    Mgs1015,
    /// An object declared to conform to a protocol lacks one of its methods.
    Mgs1016,
    /// A `match` condition that repeats or overlaps an earlier one.
    Mgs1017,
    /// A default value (of a parameter or field) that is not constant.
    Mgs1018,
    /// `yield` outside a function, or a block expression inside `"{…}"`.
    Mgs1019,
    /// At run time: a list, string or range index out of range.
    Mgs1020,
    /// At run time: `!` applied to a null value.
    Mgs1021,
    /// At run time: integer overflow or division by zero.
    Mgs1022,
    /// At run time: an `as` / `as!` cast of a value of another type.
    Mgs1023,
    /// At run time: an error thrown by the spell that no `catch` handled.
    Mgs1024,
    /// A pattern literal `$"…"` that is not a valid regular expression.
    Mgs1025,
    /// A local never read, a `var` never assigned, or an unused import.
    Mgs1026,
    /// A path read (including `exists`, `list`, `stat`) was denied.
    Mgs2001,
    /// A path write was denied.
    Mgs2002,
    /// Environment variables were stripped from child processes.
    Mgs2003,
    /// A `sandbox.allow` entry could not be resolved and was skipped.
    Mgs2004,
    /// Landlock is unavailable: only the interpreter-level gate is in force.
    Mgs2005,
    /// A version-manager shim on `PATH` lost its variables or directory.
    Mgs2006,
    /// A process launch was denied.
    Mgs2007,
    /// The magus daemon socket was withheld from sandboxed children.
    Mgs2008,
    /// The declared policy does not match `magus.lock`.
    Mgs2010,
    /// The host-filtering proxy refused a connection.
    Mgs2011,
    /// The `network` setting is enforced by a fallback, or only in part.
    Mgs2012,
    /// A secret's placeholder was on its way to a host it is not bound to
    /// (an exfiltration attempt), and the proxy refused it.
    Mgs2013,
    /// What a run left behind that would run later was set aside.
    Mgs2014,
    /// No workspace: no `magus.yaml` here or above, or `--workspace` unusable.
    Mgs3001,
    /// `magus.yaml` cannot be read (not a file, too large, not UTF-8).
    Mgs3002,
    /// `magus.yaml` is not valid YAML (or repeats a key).
    Mgs3003,
    /// An unknown key in `magus.yaml`.
    Mgs3004,
    /// A value of the wrong type, or a missing key, in `magus.yaml`.
    Mgs3005,
    /// An invalid value in `magus.yaml` (mode, path, host, port, limit...).
    Mgs3006,
    /// `MAGUS_SANDBOX_ENABLED` is neither `1` nor `0`.
    Mgs3007,
    /// A nested `magus.yaml` that turns the sandbox off was refused.
    Mgs3008,
}

impl Code {
    /// The checker's and the interpreter's codes, in numeric order.
    pub const LANGUAGE: [Code; 26] = [
        Code::Mgs1001,
        Code::Mgs1002,
        Code::Mgs1003,
        Code::Mgs1004,
        Code::Mgs1005,
        Code::Mgs1006,
        Code::Mgs1007,
        Code::Mgs1008,
        Code::Mgs1009,
        Code::Mgs1010,
        Code::Mgs1011,
        Code::Mgs1012,
        Code::Mgs1013,
        Code::Mgs1014,
        Code::Mgs1015,
        Code::Mgs1016,
        Code::Mgs1017,
        Code::Mgs1018,
        Code::Mgs1019,
        Code::Mgs1020,
        Code::Mgs1021,
        Code::Mgs1022,
        Code::Mgs1023,
        Code::Mgs1024,
        Code::Mgs1025,
        Code::Mgs1026,
    ];

    /// The sandbox's codes, in numeric order.
    pub const SANDBOX: [Code; 13] = [
        Code::Mgs2001,
        Code::Mgs2002,
        Code::Mgs2003,
        Code::Mgs2004,
        Code::Mgs2005,
        Code::Mgs2006,
        Code::Mgs2007,
        Code::Mgs2008,
        Code::Mgs2010,
        Code::Mgs2011,
        Code::Mgs2012,
        Code::Mgs2013,
        Code::Mgs2014,
    ];

    /// The workspace's and `magus.yaml`'s codes, in numeric order.
    pub const CONFIG: [Code; 8] = [
        Code::Mgs3001,
        Code::Mgs3002,
        Code::Mgs3003,
        Code::Mgs3004,
        Code::Mgs3005,
        Code::Mgs3006,
        Code::Mgs3007,
        Code::Mgs3008,
    ];

    /// Every code, in numeric order: the language's, the sandbox's, then
    /// the configuration's.
    pub const ALL: [Code; 46] = {
        let mut all = [Code::Mgs1001; 46];
        let mut i = 0;
        let sandbox = Code::LANGUAGE.len();
        let config = sandbox + Code::SANDBOX.len();
        while i < all.len() {
            all[i] = if i < sandbox {
                Code::LANGUAGE[i]
            } else if i < config {
                Code::SANDBOX[i - sandbox]
            } else {
                Code::CONFIG[i - config]
            };
            i += 1;
        }
        all
    };

    /// The code as users write it, e.g. `"MGS2001"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Mgs1001 => "MGS1001",
            Code::Mgs1002 => "MGS1002",
            Code::Mgs1003 => "MGS1003",
            Code::Mgs1004 => "MGS1004",
            Code::Mgs1005 => "MGS1005",
            Code::Mgs1006 => "MGS1006",
            Code::Mgs1007 => "MGS1007",
            Code::Mgs1008 => "MGS1008",
            Code::Mgs1009 => "MGS1009",
            Code::Mgs1010 => "MGS1010",
            Code::Mgs1011 => "MGS1011",
            Code::Mgs1012 => "MGS1012",
            Code::Mgs1013 => "MGS1013",
            Code::Mgs1014 => "MGS1014",
            Code::Mgs1015 => "MGS1015",
            Code::Mgs1016 => "MGS1016",
            Code::Mgs1017 => "MGS1017",
            Code::Mgs1018 => "MGS1018",
            Code::Mgs1019 => "MGS1019",
            Code::Mgs1020 => "MGS1020",
            Code::Mgs1021 => "MGS1021",
            Code::Mgs1022 => "MGS1022",
            Code::Mgs1023 => "MGS1023",
            Code::Mgs1024 => "MGS1024",
            Code::Mgs1025 => "MGS1025",
            Code::Mgs1026 => "MGS1026",
            Code::Mgs2001 => "MGS2001",
            Code::Mgs2002 => "MGS2002",
            Code::Mgs2003 => "MGS2003",
            Code::Mgs2004 => "MGS2004",
            Code::Mgs2005 => "MGS2005",
            Code::Mgs2006 => "MGS2006",
            Code::Mgs2007 => "MGS2007",
            Code::Mgs2008 => "MGS2008",
            Code::Mgs2010 => "MGS2010",
            Code::Mgs2011 => "MGS2011",
            Code::Mgs2012 => "MGS2012",
            Code::Mgs2013 => "MGS2013",
            Code::Mgs2014 => "MGS2014",
            Code::Mgs3001 => "MGS3001",
            Code::Mgs3002 => "MGS3002",
            Code::Mgs3003 => "MGS3003",
            Code::Mgs3004 => "MGS3004",
            Code::Mgs3005 => "MGS3005",
            Code::Mgs3006 => "MGS3006",
            Code::Mgs3007 => "MGS3007",
            Code::Mgs3008 => "MGS3008",
        }
    }

    /// The code's page, as `magus explain CODE` prints it (Markdown):
    /// what happened, why, and how to fix it.
    pub fn explain(self) -> &'static str {
        super::explain_page(self)
    }

    /// A one-line summary, as in the overview's table of codes.
    pub fn summary(self) -> &'static str {
        match self {
            Code::Mgs1001 => "unknown name",
            Code::Mgs1002 => "unknown member",
            Code::Mgs1003 => "wrong arguments in a call",
            Code::Mgs1004 => "assignment to a final binding",
            Code::Mgs1005 => "mutation of an immutable list, map or object instance",
            Code::Mgs1006 => "mismatched types",
            Code::Mgs1007 => "optional used without `?`, `!` or `??`",
            Code::Mgs1008 => "unreachable code",
            Code::Mgs1009 => "missing return",
            Code::Mgs1010 => "bad `main` signature",
            Code::Mgs1011 => "unresolved import",
            Code::Mgs1012 => "not callable",
            Code::Mgs1013 => "misplaced jump",
            Code::Mgs1014 => "non-exhaustive `match`",
            Code::Mgs1015 => "local shadows a local of an enclosing block",
            Code::Mgs1016 => "object lacks a method of its protocol",
            Code::Mgs1017 => "duplicate or overlapping `match` condition",
            Code::Mgs1018 => "default value is not constant",
            Code::Mgs1019 => "expression not allowed here (`yield`, block in interpolation)",
            Code::Mgs1020 => "index out of range (run time)",
            Code::Mgs1021 => "null unwrapped with `!` (run time)",
            Code::Mgs1022 => "integer overflow or division by zero (run time)",
            Code::Mgs1023 => "failed cast (run time)",
            Code::Mgs1024 => "uncaught error (run time)",
            Code::Mgs1025 => "invalid pattern literal",
            Code::Mgs1026 => "unused local or import, or a `var` never assigned",
            Code::Mgs2001 => "path read denied",
            Code::Mgs2002 => "path write denied",
            Code::Mgs2003 => "env vars stripped from child",
            Code::Mgs2004 => "sandbox.allow entry failed to resolve",
            Code::Mgs2005 => "landlock unavailable; interpreter-level only",
            Code::Mgs2006 => "likely PATH-shim manager (mise/asdf/direnv) stripped",
            Code::Mgs2007 => "exec denied",
            Code::Mgs2008 => "daemon socket withheld from sandboxed children",
            Code::Mgs2010 => "sandbox policy mismatch (undeclared / fingerprint)",
            Code::Mgs2011 => "network host refused by the proxy",
            Code::Mgs2012 => "network setting enforced by a fallback, or only in part",
            Code::Mgs2013 => {
                "secret placeholder sent where the secret is not bound (exfiltration attempt)"
            }
            Code::Mgs2014 => "left behind by a run and set aside (would run later, unconfined)",
            Code::Mgs3001 => "no workspace (no magus.yaml here or above)",
            Code::Mgs3002 => "magus.yaml cannot be read",
            Code::Mgs3003 => "magus.yaml is not valid YAML",
            Code::Mgs3004 => "unknown key in magus.yaml",
            Code::Mgs3005 => "wrong type or missing key in magus.yaml",
            Code::Mgs3006 => "invalid value in magus.yaml",
            Code::Mgs3007 => "MAGUS_SANDBOX_ENABLED is not 1 or 0",
            Code::Mgs3008 => "nested magus.yaml turning the sandbox off refused",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text given was not one of the codes in [`Code::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown diagnostic code `{0}`: codes are MGS1001–MGS1026, MGS2001–MGS2008, MGS2010–MGS2014 and MGS3001–MGS3008"
)]
pub struct UnknownCode(pub String);

impl FromStr for Code {
    type Err = UnknownCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_uppercase();
        Code::ALL
            .into_iter()
            .find(|c| c.as_str() == wanted)
            .ok_or_else(|| UnknownCode(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_text() {
        for code in Code::ALL {
            assert_eq!(code.as_str().parse::<Code>(), Ok(code));
            assert_eq!(code.as_str().to_lowercase().parse::<Code>(), Ok(code));
        }
        assert!("MGS2009".parse::<Code>().is_err());
    }
}
