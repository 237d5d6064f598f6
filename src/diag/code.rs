//! The stable diagnostic codes of the sandbox (MGS2001–MGS2008, MGS2010–MGS2012).
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
}

impl Code {
    /// Every code, in numeric order.
    pub const ALL: [Code; 11] = [
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
    ];

    /// The code as users write it, e.g. `"MGS2001"`.
    pub fn as_str(self) -> &'static str {
        match self {
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
        }
    }

    /// A one-line summary, as in the overview's table of codes.
    pub fn summary(self) -> &'static str {
        match self {
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
#[error("unknown diagnostic code `{0}`: codes are MGS2001–MGS2008 and MGS2010–MGS2012")]
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
