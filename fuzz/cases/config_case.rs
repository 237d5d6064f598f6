//! One config-loader case: any bytes given to `parse_config` must give a
//! config or a `ConfigError` whose position lies inside the input and whose
//! diagnostic renders, never a panic. Shared by the `config` fuzz target and
//! the corpus replay test.

use magus_sandbox::testing::policy::config::parse_config;
use std::path::Path;

/// Runs the loader on `data`; an error that points outside the input is
/// reported as a failure.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    let Err(error) = parse_config(Path::new("magus.yaml"), data) else {
        return Ok(());
    };
    // An upper bound: YAML 1.1 also breaks lines at CR, NEL, LS and PS.
    let breaks = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];
    let text = String::from_utf8_lossy(data);
    let lines = text.chars().filter(|c| breaks.contains(c)).count() + 1;
    let line = usize::try_from(error.line).unwrap_or(usize::MAX);
    if error.line == 0 || error.column == 0 || line > lines {
        return Err(format!(
            "error position {}:{} outside the {lines}-line input: {error}",
            error.line, error.column
        ));
    }
    let _ = error.to_string();
    let _ = error.kind.hint();
    Ok(())
}
