//! How `import` names what it imports: upstream's library names
//! (`buzz:std`, `buzz:math`, …), magus's own modules (`fs`, `magus:fs`,
//! …), the spell's own `.buzz` files by relative path, and the libraries
//! magus refuses. Plain rules on the import's text, shared by the run
//! (`vm/imports.rs`, which performs the import) and the check (`check/`),
//! needing nothing of either.

/// Upstream libraries magus does not offer, and why.
pub(in crate::buzz) const REFUSED: &[(&str, &str)] = &[
    ("buzz:ffi", "FFI to native code is not available in magus"),
    (
        "buzz:http",
        "`buzz:http` is not available in magus: spells have no network library",
    ),
];

/// Native modules that only serve libraries written in Buzz; importable,
/// but not advertised.
pub(in crate::buzz) const INTERNAL: [&str; 4] = ["bufraw", "cryptoraw", "ioraw", "jsonraw"];

/// The registry key of a library import, or `None` for a file path.
pub(in crate::buzz) fn library_key(spec: &str) -> Option<&str> {
    if let Some(name) = spec.strip_prefix("magus:") {
        return Some(name);
    }
    match spec {
        "buzz:std" => Some("std"),
        "buzz:math" => Some("math"),
        _ if spec.starts_with("buzz:") => Some(spec),
        _ if !spec.contains('/') && !spec.contains('.') => Some(spec),
        _ => None,
    }
}

/// How a spell imports the module seen as `name`, as the spells magus
/// ships write it: upstream's libraries by their `buzz:` name.
pub(in crate::buzz) fn import_spec(name: &str) -> String {
    match name {
        "std" | "math" => format!("buzz:{name}"),
        _ => name.to_string(),
    }
}

/// The name a module is seen as without an alias: `buzz:fs` is `fs`.
pub(in crate::buzz) fn default_name(spec: &str) -> &str {
    let tail = spec.rsplit(['/', ':']).next().unwrap_or(spec);
    tail.strip_suffix(".buzz").unwrap_or(tail)
}
