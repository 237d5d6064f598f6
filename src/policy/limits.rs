//! `sandbox.limits` as declared: how long a run may take, how many
//! processes it may hold at once, how much memory each may use. This
//! module parses and names the units; `enforce::limits` applies them.
//!
//! Units are written out so a value reads the same to everyone: wall time
//! is `<n>s`, `<n>m`, `<n>h` or `<n>d`; memory is `<n>KiB`, `MiB`, `GiB` or
//! `TiB` (binary, 1 KiB = 1024 bytes); processes is a plain count.

use std::fmt;
use std::time::Duration;

/// The smallest `memory` accepted: magus itself needs a few MiB.
pub(crate) const MIN_MEMORY: u64 = 16 << 20;

/// The largest `processes` accepted: the kernel's own PID ceiling (2^22)
/// minus the 300 PIDs it reserves at the bottom of every namespace.
pub(crate) const MAX_PROCESSES: u32 = (1 << 22) - 301;

/// The longest `wall_time` accepted (`alarm(2)` counts seconds in a u32).
pub(crate) const MAX_WALL_TIME_SECS: u64 = u32::MAX as u64;

/// Every bound of `sandbox.limits`; `None` means unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time from start-up to the end of the run.
    pub wall_time: Option<Duration>,
    /// Processes (and threads) magus and everything it starts may hold at
    /// once, magus included.
    pub processes: Option<u32>,
    /// Bytes of private writable memory (heap, anonymous mappings) one
    /// process may map; also the interpreter's own heap budget.
    pub memory: Option<u64>,
}

impl Limits {
    /// No bound at all.
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }
}

/// Why a written limit is not a valid one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    #[error("no unit (write e.g. `{0}`)")]
    MissingUnit(&'static str),
    #[error("unknown unit `{0}`")]
    UnknownUnit(String),
    #[error("not a whole number followed by a unit")]
    NotANumber,
    #[error("zero is no limit; omit the key to leave it unbounded")]
    Zero,
    #[error("too large (at most {0})")]
    TooLarge(String),
    #[error("too small (at least {0})")]
    TooSmall(String),
}

/// `30s`, `10m`, `2h`, `1d` → a duration.
pub(crate) fn parse_wall_time(text: &str) -> Result<Duration, LimitError> {
    let (number, unit) = split_number(text.trim())?;
    let scale = match unit {
        "" => return Err(LimitError::MissingUnit("30s` or `10m")),
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(LimitError::UnknownUnit(other.to_string())),
    };
    let secs = number
        .checked_mul(scale)
        .filter(|&s| s <= MAX_WALL_TIME_SECS);
    let secs = secs.ok_or_else(|| LimitError::TooLarge(format!("{MAX_WALL_TIME_SECS}s")))?;
    nonzero(secs).map(Duration::from_secs)
}

/// `512MiB`, `2GiB` → bytes.
pub(crate) fn parse_memory(text: &str) -> Result<u64, LimitError> {
    let (number, unit) = split_number(text.trim())?;
    let shift = match unit {
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        "" => return Err(LimitError::MissingUnit("512MiB` or `2GiB")),
        other => return Err(LimitError::UnknownUnit(other.to_string())),
    };
    let bytes = nonzero(number)?
        .checked_mul(1 << shift)
        .ok_or_else(|| LimitError::TooLarge("16777215TiB".into()))?;
    if bytes < MIN_MEMORY {
        return Err(LimitError::TooSmall(Bytes(MIN_MEMORY).to_string()));
    }
    Ok(bytes)
}

/// A count of processes, 1 to [`MAX_PROCESSES`].
pub(crate) fn check_processes(count: i64) -> Result<u32, LimitError> {
    if count <= 0 {
        return Err(LimitError::Zero);
    }
    u32::try_from(count)
        .ok()
        .filter(|&n| n <= MAX_PROCESSES)
        .ok_or_else(|| LimitError::TooLarge(MAX_PROCESSES.to_string()))
}

fn nonzero(n: u64) -> Result<u64, LimitError> {
    if n == 0 {
        return Err(LimitError::Zero);
    }
    Ok(n)
}

/// Leading ASCII digits and the rest.
fn split_number(text: &str) -> Result<(u64, &str), LimitError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(LimitError::NotANumber);
    }
    let number = text[..digits]
        .parse::<u64>()
        .map_err(|_| LimitError::TooLarge(format!("{}", u64::MAX)))?;
    Ok((number, &text[digits..]))
}

/// A byte count shown in the largest binary unit that divides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if self.0 >= 1 << shift && self.0.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{} bytes", self.0)
    }
}

/// A duration shown in the largest unit that divides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seconds(pub u64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (scale, unit) in [(86_400, "d"), (3600, "h"), (60, "m")] {
            if self.0 >= scale && self.0.is_multiple_of(scale) {
                return write!(f, "{}{unit}", self.0 / scale);
            }
        }
        write!(f, "{}s", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_parse_in_each_unit() {
        let cases: [(&str, Result<u64, LimitError>); 9] = [
            ("30s", Ok(30)),
            ("10m", Ok(600)),
            ("2h", Ok(7200)),
            ("1d", Ok(86_400)),
            ("30", Err(LimitError::MissingUnit("30s` or `10m"))),
            ("0s", Err(LimitError::Zero)),
            ("5 min", Err(LimitError::UnknownUnit(" min".into()))),
            ("m", Err(LimitError::NotANumber)),
            ("-3s", Err(LimitError::NotANumber)),
        ];
        for (text, want) in cases {
            let got = parse_wall_time(text).map(|d| d.as_secs());
            assert_eq!(got, want, "{text}");
        }
        assert!(matches!(
            parse_wall_time("99999999999d"),
            Err(LimitError::TooLarge(_))
        ));
    }

    #[test]
    fn memory_parses_binary_units_only() {
        let cases: [(&str, Result<u64, LimitError>); 7] = [
            ("64MiB", Ok(64 << 20)),
            ("2GiB", Ok(2 << 30)),
            ("1TiB", Ok(1 << 40)),
            ("16384KiB", Ok(16 << 20)),
            ("2GB", Err(LimitError::UnknownUnit("GB".into()))),
            ("1024", Err(LimitError::MissingUnit("512MiB` or `2GiB"))),
            ("1MiB", Err(LimitError::TooSmall("16MiB".into()))),
        ];
        for (text, want) in cases {
            assert_eq!(parse_memory(text), want, "{text}");
        }
    }

    #[test]
    fn processes_are_a_positive_count() {
        assert_eq!(check_processes(256), Ok(256));
        assert_eq!(check_processes(0), Err(LimitError::Zero));
        assert_eq!(check_processes(-1), Err(LimitError::Zero));
        assert!(check_processes(i64::from(MAX_PROCESSES) + 1).is_err());
    }

    #[test]
    fn amounts_display_in_their_largest_whole_unit() {
        assert_eq!(Bytes(2 << 30).to_string(), "2GiB");
        assert_eq!(Bytes(1536 << 20).to_string(), "1536MiB");
        assert_eq!(Bytes(1000).to_string(), "1000 bytes");
        assert_eq!(Seconds(600).to_string(), "10m");
        assert_eq!(Seconds(90).to_string(), "90s");
        assert_eq!(Seconds(7200).to_string(), "2h");
    }
}
