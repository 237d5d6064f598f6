//! Resolution: the declared config plus the machine (HOME, TMPDIR, real
//! paths) become the list of grants, with a diagnostic for every entry that
//! was skipped (MGS2004) or adds nothing. Every granted path is canonical;
//! an exact path granted twice collapses into one grant with the greater
//! mode.

use super::builtin::{Builtin, BUILTIN_RO, BUILTIN_RW, CACHE_WHY, TMPDIR_WHY};
use super::config::{AllowEntry, SandboxConfig};
use super::env::DAEMON_SOCKET_VAR;
use super::grant::{lies_within, Grant, GrantSource, Mode};
use super::workspace::lookup;
use super::EnvPattern;
use crate::diag::{Code, Diagnostic, Location, SourceKind};
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What resolution produced: the grants (deduplicated) and its diagnostics.
#[derive(Debug, Clone)]
pub(crate) struct Resolution {
    pub grants: Vec<Grant>,
    pub diagnostics: Vec<Diagnostic>,
    /// See [`hidden_stores`].
    pub hidden: Vec<PathBuf>,
    /// See [`dedupe`].
    pub stood_in: Vec<Grant>,
}

/// The inputs of resolution.
pub(crate) struct Inputs<'a> {
    /// The real workspace root.
    pub workspace: &'a Path,
    /// `magus.yaml`, for diagnostic locations.
    pub config_file: Option<&'a Path>,
    pub sandbox: Option<&'a SandboxConfig>,
    pub env: &'a [(OsString, OsString)],
}

/// Why one `sandbox.allow` entry was skipped.
struct Skipped {
    why: String,
    expanded: Option<PathBuf>,
}

pub(crate) fn resolve(inputs: &Inputs<'_>) -> Resolution {
    let home = home_dir(inputs.env);
    let real_home = home.as_ref().ok().and_then(|h| real_path(h).ok());
    let mut grants = Vec::new();
    let mut diagnostics = Vec::new();
    match policy_path(inputs.workspace) {
        Ok(path) => grants.push(Grant {
            path,
            mode: Mode::Rw,
            source: GrantSource::Workspace,
        }),
        Err(e) => diagnostics.push(unmodelled_workspace(inputs.workspace, &e)),
    }
    grants.extend(builtins(&BUILTIN_RW, inputs.env));
    for (dir, why) in machine_dirs(inputs.env, home.as_deref().ok()) {
        push_machine_dir(
            &mut grants,
            &mut diagnostics,
            &dir,
            why,
            real_home.as_deref(),
        );
    }
    refuse_planted_machine_dirs(
        &mut grants,
        &mut diagnostics,
        &machine_dirs(inputs.env, home.as_deref().ok()),
    );
    grants.extend(builtins(&BUILTIN_RO, inputs.env));
    let entries = inputs.sandbox.map_or(&[][..], |s| &s.allow[..]);
    let resolved: Vec<_> = entries
        .iter()
        .map(|entry| (entry, resolve_entry(entry, inputs.workspace, &home)))
        .collect();
    let writable = writable_roots(&grants, &resolved);
    for (index, (entry, result)) in resolved.into_iter().enumerate() {
        let others: Vec<&WritableRoot> =
            writable.iter().filter(|w| w.entry != Some(index)).collect();
        match result.and_then(|(expanded, real)| refuse_planted(&expanded, real, &others)) {
            Ok(path) => grants.push(config_grant(entry, path)),
            Err(skipped) => diagnostics.push(mgs2004(inputs, entry, skipped)),
        }
    }
    diagnostics.extend(covered_warnings(inputs, &grants));
    diagnostics.extend(home_warnings(inputs, &grants, real_home.as_deref()));
    if let Some(sandbox) = inputs.sandbox {
        diagnostics.extend(passthrough_warnings(inputs, sandbox));
    }
    let (grants, stood_in) = dedupe(grants);
    let grants = prune_builtins(grants);
    let hidden = hidden_stores(&grants, real_home.as_deref());
    Resolution {
        grants,
        diagnostics,
        hidden,
        stood_in,
    }
}

/// The credential stores (`super::credentials`) that exist and lie
/// strictly inside a grant that does not name them. A grant of `~/.cargo`
/// (what a Rust build needs, and the README's example) held
/// `~/.cargo/credentials.toml`, the crates.io token a compromised
/// `build.rs` could publish with; one of `~/.config` held `~/.config/op`
/// and the GitHub CLI's token, with no word said. A store granted by name
/// (the entry is the store or lies in it) is the user's explicit choice.
///
/// A store is found where it really is, and so is everything a link
/// inside it leads to: a dotfile manager makes `~/.ssh` a link into
/// `~/dotfiles` (`stow ssh`), or links each file (`~/.ssh/id_rsa ->
/// ../dotfiles/ssh/.ssh/id_rsa`), and a run in `~/dotfiles`, or with it
/// granted, read the key at its real path (a red-team run, 2026-12-07).
/// A link that leads nowhere, or outside every grant, hides nothing.
fn hidden_stores(grants: &[Grant], real_home: Option<&Path>) -> Vec<PathBuf> {
    use super::credentials::{HOME_DIRS, HOME_FILES};
    let Some(home) = real_home else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut linked = Vec::new();
    for rel in HOME_DIRS.iter().chain(HOME_FILES.iter()) {
        let Ok(real) = real_path(&home.join(rel)) else {
            continue;
        };
        let mut budget = LINK_BUDGET;
        link_targets(&real, LINK_DEPTH, &mut budget, &mut linked);
        found.push(real);
    }
    // What a link inside a store leads to is hidden where a grant of the
    // user's shows it, not where the system's do: Docker links
    // `~/.docker/cli-plugins/docker-compose` to its binary in `/usr`, which
    // is a program, not a credential, and spells run it.
    let hidden = |path: &PathBuf, by_system: bool| {
        let shown = grants
            .iter()
            .filter(|g| by_system || !matches!(g.source, GrantSource::Builtin(_)))
            .any(|g| lies_within(path, &g.path));
        let named = grants.iter().any(|g| lies_within(&g.path, path));
        shown && !named
    };
    found.retain(|path| hidden(path, true));
    linked.retain(|path| hidden(path, false));
    found.extend(linked);
    found.sort();
    found.dedup();
    found
}

/// How deep [`link_targets`] looks below a store, and how many entries it
/// reads in all: stores hold a few files each; a start-up must not walk a
/// huge directory someone linked in.
const LINK_DEPTH: u32 = 4;
const LINK_BUDGET: u32 = 512;

/// Where each link below the directory `dir` really leads (for a link to
/// a directory, that directory, not what it holds).
fn link_targets(dir: &Path, depth: u32, budget: &mut u32, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            if let Ok(target) = real_path(&entry.path()) {
                found.push(target);
            }
        } else if kind.is_dir() && depth > 1 {
            link_targets(&entry.path(), depth - 1, budget, found);
        }
    }
}

/// The files other spells' secrets are read from (`from: {file: PATH}`,
/// `~/` expanded with `home`) that lie strictly inside one of `grants`
/// without a grant naming them: hidden like a credential store. A spell
/// granted `~/.config` read the token file another spell's secret came
/// from. The spell's own secret files are not here: its start-up refuses
/// one its view shows (`sandbox::startup::secrets`).
pub(crate) fn hidden_secret_files(
    spelled: &[&str],
    home: Option<&Path>,
    grants: &[Grant],
) -> Vec<PathBuf> {
    spelled
        .iter()
        .filter_map(|file| match file.strip_prefix("~/") {
            Some(rest) => home.map(|h| h.join(rest)),
            None => Some(PathBuf::from(file)),
        })
        .filter_map(|path| real_path(&path).ok())
        .filter(|path| {
            let shown = grants.iter().any(|g| lies_within(path, &g.path));
            let named = grants.iter().any(|g| lies_within(&g.path, path));
            shown && !named
        })
        .collect()
}

/// Drops built-ins another grant already covers (`/bin` is `/usr/bin` on a
/// merged-/usr system): they change no decision, only lengthen the list.
fn prune_builtins(grants: Vec<Grant>) -> Vec<Grant> {
    let keep: Vec<bool> = grants
        .iter()
        .enumerate()
        .map(|(i, g)| {
            !matches!(g.source, GrantSource::Builtin(_))
                || !grants
                    .iter()
                    .enumerate()
                    .any(|(j, other)| covers(j, other, i, g))
        })
        .collect();
    grants
        .into_iter()
        .zip(keep)
        .filter_map(|(g, keep)| keep.then_some(g))
        .collect()
}

/// The built-ins of `table` that exist here. On Windows the table is
/// the Windows one, each path below a variable of `env` (`builtin.rs`).
fn builtins<'t>(
    table: &'t [Builtin],
    env: &'t [(OsString, OsString)],
) -> impl Iterator<Item = Grant> + 't {
    #[cfg(windows)]
    let table: &[Builtin] = match table.first().map(|b| b.mode) {
        Some(Mode::Rw) => &super::builtin::WINDOWS_RW,
        _ => &super::builtin::WINDOWS_RO,
    };
    let mut real = super::RealPaths::default();
    table
        .iter()
        .filter_map(move |b| builtin_grant(b, env, &mut real))
}

fn builtin_grant(
    b: &Builtin,
    env: &[(OsString, OsString)],
    real: &mut super::RealPaths,
) -> Option<Grant> {
    let path = policy_path(&real.through_parent(&builtin_path(b, env)?)?).ok()?;
    Some(Grant {
        path,
        mode: b.mode,
        source: GrantSource::Builtin(b.why),
    })
}

/// Where built-in `b` is: its path, or on Windows `%VAR%\rest` expanded.
fn builtin_path(b: &Builtin, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let Some(spelled) = b.path.strip_prefix('%') else {
        return Some(PathBuf::from(b.path));
    };
    let (var, rest) = spelled.split_once('%')?;
    let dir = PathBuf::from(lookup(env, var)?);
    let rest = rest.trim_start_matches(['\\', '/']);
    dir.is_absolute().then(|| dir.join(rest))
}

/// The policy's form of the real path of `path`: canonical, and on
/// Windows the key of the Windows path model (`/c:/users/me`).
fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    policy_path(&path.canonicalize()?)
}

/// The policy's form of `real`, a canonical path.
fn policy_path(real: &Path) -> std::io::Result<PathBuf> {
    super::native::from_os(real)
        .map(super::NormalPath::into_path_buf)
        .map_err(std::io::Error::other)
}

/// The workspace is a path the model refuses (a network share on
/// Windows): nothing there is granted, so every spell's `fs.*` in it is
/// refused.
fn unmodelled_workspace(workspace: &Path, e: &std::io::Error) -> Diagnostic {
    let message = format!(
        "the workspace `{}` is not granted: {e}",
        workspace.display()
    );
    Diagnostic::warning(message)
        .with_path(workspace.display().to_string())
        .with_help("move the workspace to a local drive (`C:\\...`)")
}

/// Windows: the user's temporary directory (`%TEMP%`, else `%TMP%`) as
/// `$TMPDIR`, and magus's cache in `%LOCALAPPDATA%\magus`.
#[cfg(windows)]
fn machine_dirs(
    env: &[(OsString, OsString)],
    _home: Option<&Path>,
) -> Vec<(PathBuf, &'static str)> {
    let absolute = |name: &str| {
        lookup(env, name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let mut dirs = Vec::new();
    if let Some(tmp) = absolute("TEMP").or_else(|| absolute("TMP")) {
        dirs.push((tmp, TMPDIR_WHY));
    }
    if let Some(local) = absolute("LOCALAPPDATA") {
        dirs.push((local.join("magus"), CACHE_WHY));
    }
    dirs
}

/// `$TMPDIR` and magus's cache (`$XDG_CACHE_HOME/magus`, else
/// `~/.cache/magus`); relative values are ignored, as XDG says.
#[cfg(not(windows))]
fn machine_dirs(env: &[(OsString, OsString)], home: Option<&Path>) -> Vec<(PathBuf, &'static str)> {
    let absolute = |name: &str| {
        lookup(env, name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let mut dirs = Vec::new();
    if let Some(tmp) = absolute("TMPDIR") {
        dirs.push((tmp, TMPDIR_WHY));
    }
    let cache = absolute("XDG_CACHE_HOME").or_else(|| home.map(|h| h.join(".cache")));
    if let Some(cache) = cache {
        dirs.push((cache.join("magus"), CACHE_WHY));
    }
    dirs
}

/// Grants a machine-dependent `rw` default, unless it is missing (quietly
/// skipped) or would expose the whole home directory (skipped, warned).
fn push_machine_dir(
    grants: &mut Vec<Grant>,
    diagnostics: &mut Vec<Diagnostic>,
    dir: &Path,
    why: &'static str,
    real_home: Option<&Path>,
) {
    let Ok(path) = real_path(dir) else {
        return;
    };
    if real_home.is_some_and(|h| h.starts_with(&path)) {
        let message = format!(
            "{why} (`{}`) is not granted: it would expose your whole home directory",
            path.display()
        );
        diagnostics.push(Diagnostic::warning(message).with_path(path.display().to_string()));
        return;
    }
    grants.push(Grant {
        path,
        mode: Mode::Rw,
        source: GrantSource::Builtin(why),
    });
}

/// `$TMPDIR` and the cache are granted `rw` like a `sandbox.allow` entry
/// and are as open to a planted link: with `TMPDIR=/tmp/me` and no jail
/// (children then share the host's `/tmp`), a child replaced `/tmp/me`
/// with a link to `~/.ssh`, and the next run granted the keys `rw`. A
/// machine directory that leads out of every other writable place through
/// a link lying in one is skipped, with a warning (`refuse_planted`).
fn refuse_planted_machine_dirs(
    grants: &mut Vec<Grant>,
    diagnostics: &mut Vec<Diagnostic>,
    dirs: &[(PathBuf, &'static str)],
) {
    let mut planted = Vec::new();
    for (index, grant) in grants.iter().enumerate() {
        let GrantSource::Builtin(why) = grant.source else {
            continue;
        };
        let Some((spelled, _)) = dirs.iter().find(|(_, w)| *w == why) else {
            continue;
        };
        let others: Vec<&Path> = grants
            .iter()
            .enumerate()
            .filter(|(j, g)| *j != index && g.mode == Mode::Rw)
            .map(|(_, g)| g.path.as_path())
            .collect();
        // As for `sandbox.allow` entries (`refuse_planted`): only a place
        // the children share with the host makes a link harmless.
        let shared = grants
            .iter()
            .enumerate()
            .filter(|(j, g)| *j != index && g.mode == Mode::Rw && !g.is_private_per_run());
        if shared
            .into_iter()
            .any(|(_, w)| lies_within(&grant.path, &w.path))
        {
            continue;
        }
        if let Some(link) = planted_link(spelled, &others) {
            let message = format!(
                "{why} (`{}`) is not granted: it leads through `{}`, a symbolic link in a \
                 directory that spells can write, so a spell could have planted it; if you \
                 mean `{}`, set the variable to that path",
                spelled.display(),
                link.display(),
                grant.path.display()
            );
            diagnostics.push(Diagnostic::warning(message).with_path(spelled.display().to_string()));
            planted.push(index);
        }
    }
    for index in planted.into_iter().rev() {
        grants.remove(index);
    }
}

fn config_grant(entry: &AllowEntry, path: PathBuf) -> Grant {
    Grant {
        path,
        mode: entry.mode,
        source: GrantSource::Config {
            spelled: entry.path.clone(),
            line: entry.at.line,
            column: entry.at.column,
            spell: entry.spell.clone(),
        },
    }
}

/// `$HOME`, or why it cannot be used. Windows has no `HOME` of its own:
/// there `%USERPROFILE%` stands in when `HOME` is not set.
fn home_dir(env: &[(OsString, OsString)]) -> Result<PathBuf, &'static str> {
    let home = lookup(env, "HOME");
    #[cfg(windows)]
    let home = home.or_else(|| lookup(env, "USERPROFILE"));
    let home = home.ok_or("HOME is not set")?;
    if home.is_empty() {
        return Err("HOME is empty");
    }
    let home = PathBuf::from(home);
    if !home.is_absolute() {
        return Err("HOME is not an absolute path");
    }
    Ok(home)
}

/// An entry as expanded and its real path, or why it was skipped.
type Resolved = Result<(PathBuf, PathBuf), Skipped>;

/// The entry as expanded, and its real path.
fn resolve_entry(
    entry: &AllowEntry,
    workspace: &Path,
    home: &Result<PathBuf, &'static str>,
) -> Resolved {
    let expanded = expand(&entry.path, workspace, home).map_err(|why| Skipped {
        why,
        expanded: None,
    })?;
    match real_path(&expanded) {
        Ok(real) => Ok((expanded, real)),
        Err(e) => Err(Skipped {
            why: io_reason(&e),
            expanded: Some(expanded),
        }),
    }
}

/// A place spells (and their children) may write: an `rw` grant, with
/// the index of the `sandbox.allow` entry it comes from, and whether the
/// jail makes it private to each run ([`Grant::is_private_per_run`]).
struct WritableRoot {
    entry: Option<usize>,
    path: PathBuf,
    private: bool,
}

/// Every `rw` grant, built-in and declared.
fn writable_roots(grants: &[Grant], resolved: &[(&AllowEntry, Resolved)]) -> Vec<WritableRoot> {
    let mut roots: Vec<WritableRoot> = grants
        .iter()
        .filter(|g| g.mode == Mode::Rw)
        .map(|g| WritableRoot {
            entry: None,
            path: g.path.clone(),
            private: g.is_private_per_run(),
        })
        .collect();
    for (index, (entry, result)) in resolved.iter().enumerate() {
        if let (Mode::Rw, Ok((_, real))) = (entry.mode, result) {
            roots.push(WritableRoot {
                entry: Some(index),
                path: real.clone(),
                private: false,
            });
        }
    }
    roots
}

/// An entry that reaches outside every writable place through a symbolic
/// link that lies in one is skipped: a spell's child could have planted
/// that link during an earlier run (`ln -s ~ data` where `data` was
/// missing), and this run would grant what it points at, `~/.ssh`
/// included. Where the entry stays inside a writable place the children
/// share with the host, the link gains nothing and is followed. A place
/// the jail makes private to each run (`/tmp`, `/dev/shm`, `/dev/pts`)
/// is not one: `ln -s /tmp/tmux-1000 data` brought the host's tmux socket
/// into the next run's view.
fn refuse_planted(
    expanded: &Path,
    real: PathBuf,
    writable: &[&WritableRoot],
) -> Result<PathBuf, Skipped> {
    if writable
        .iter()
        .any(|w| !w.private && lies_within(&real, &w.path))
    {
        return Ok(real);
    }
    let places: Vec<&Path> = writable.iter().map(|w| w.path.as_path()).collect();
    match planted_link(expanded, &places) {
        None => Ok(real),
        Some(link) => Err(Skipped {
            why: format!(
                "it leads through `{}`, a symbolic link in a directory that spells can \
                 write, so a spell could have planted it to widen this grant; if you \
                 mean `{}`, write that path instead",
                link.display(),
                real.display()
            ),
            expanded: Some(expanded.to_path_buf()),
        }),
    }
}

/// The first symbolic link on the way to `expanded` that lies in a
/// directory inside `writable`, resolving as the kernel does (`..` after
/// a link goes up from where the link led).
fn planted_link(expanded: &Path, writable: &[&Path]) -> Option<PathBuf> {
    use std::path::Component;
    let mut dir = PathBuf::new();
    for part in expanded.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => dir.push(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                dir.pop();
            }
            Component::Normal(name) => {
                let next = dir.join(name);
                let meta = next.symlink_metadata().ok()?;
                let in_policy = super::native::from_os(&dir);
                let dir_key = in_policy.as_deref().unwrap_or(dir.as_path());
                if meta.file_type().is_symlink() && writable.iter().any(|w| lies_within(dir_key, w))
                {
                    return Some(next);
                }
                dir = next.canonicalize().ok()?;
            }
        }
    }
    None
}

/// `~` and `~/x` become `$HOME`-relative; relative paths are relative to
/// the workspace root. On Windows the entry is a Windows path, read by the
/// Windows path model (`winpath::expand_grant`: `%USERPROFILE%` too).
#[cfg(windows)]
fn expand(
    spelled: &str,
    workspace: &Path,
    home: &Result<PathBuf, &'static str>,
) -> Result<PathBuf, String> {
    use super::native;
    let key = |p: &Path| native::from_os(p).map_err(|e| e.to_string());
    let workspace = key(workspace)?;
    let home = home.as_ref().ok().map(|h| key(h)).transpose()?;
    let expanded = super::winpath::expand_grant(spelled, &workspace, home.as_ref())?;
    Ok(native::to_os(&expanded).into_owned())
}

/// `~` and `~/x` become `$HOME`-relative; relative paths are relative to
/// the workspace root.
#[cfg(not(windows))]
fn expand(
    spelled: &str,
    workspace: &Path,
    home: &Result<PathBuf, &'static str>,
) -> Result<PathBuf, String> {
    let Some(after_tilde) = spelled.strip_prefix('~') else {
        return Ok(workspace.join(spelled));
    };
    let rest = match after_tilde {
        "" => "",
        r if r.starts_with('/') => r.trim_start_matches('/'),
        _ => {
            return Err(
                "`~name` (another user's home) is not supported; write the full path".into(),
            )
        }
    };
    let home = home
        .as_ref()
        .map_err(|why| format!("{why}, so `~` cannot be expanded"))?;
    Ok(if rest.is_empty() {
        home.clone()
    } else {
        home.join(rest)
    })
}

fn io_reason(err: &std::io::Error) -> String {
    match err.kind() {
        ErrorKind::NotFound => "it does not exist".into(),
        ErrorKind::PermissionDenied => "it cannot be read (permission denied)".into(),
        _ => format!("it cannot be resolved: {err}"),
    }
}

fn entry_location(inputs: &Inputs<'_>, line: u32, column: u32) -> Option<Location> {
    inputs.config_file.map(|file| Location {
        kind: SourceKind::Config,
        file: file.to_path_buf(),
        line,
        column,
    })
}

fn with_location(d: Diagnostic, location: Option<Location>) -> Diagnostic {
    match location {
        Some(l) => d.with_location(l),
        None => d,
    }
}

/// MGS2004: the entry, its line, and why it was skipped.
fn mgs2004(inputs: &Inputs<'_>, entry: &AllowEntry, skipped: Skipped) -> Diagnostic {
    let message = format!(
        "sandbox.allow entry `{}` was skipped: {}",
        entry.path, skipped.why
    );
    let mut d = Diagnostic::warning(message)
        .with_code(Code::Mgs2004)
        .with_path(entry.path.clone())
        .with_label("this entry")
        .with_help("create the path, correct the entry, or remove it; the run goes on without it");
    if let Some(expanded) = skipped.expanded {
        d = d.with_note(format!("it resolves to `{}`", expanded.display()));
    }
    with_location(d, entry_location(inputs, entry.at.line, entry.at.column))
}

/// A warning (no code) for each `sandbox.allow` entry that another grant
/// already covers with at least its mode: it changes nothing, because the
/// rights of a path are the union over its granted ancestors (as Landlock
/// enforces). The typical case is an `ro` entry under an `rw` one.
fn covered_warnings(inputs: &Inputs<'_>, grants: &[Grant]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, grant) in grants.iter().enumerate() {
        let GrantSource::Config {
            spelled,
            line,
            column,
            ..
        } = &grant.source
        else {
            continue;
        };
        // In the jail a private `/tmp` holds nothing of the host's: an
        // entry under it brings the host's directory in, so it does add.
        let Some(cover) = grants
            .iter()
            .enumerate()
            .find(|&(j, other)| !other.is_private_per_run() && covers(j, other, i, grant))
        else {
            continue;
        };
        let cover = cover.1;
        let message = format!(
            "sandbox.allow entry `{spelled}` ({}) adds nothing: `{}` is already granted {} by {}",
            grant.mode,
            cover.path.display(),
            cover.mode,
            cover.source
        );
        let d = Diagnostic::warning(message)
            .with_path(spelled.clone())
            .with_label("covered by another grant")
            .with_note("the rights of a path are the union over all its granted ancestors, as Landlock enforces")
            .with_help("remove this entry");
        out.push(with_location(d, entry_location(inputs, *line, *column)));
    }
    out
}

/// Whether grant `j` makes grant `i` redundant. Of two identical grants
/// the later one is the redundant one.
fn covers(j: usize, other: &Grant, i: usize, grant: &Grant) -> bool {
    if j == i || !lies_within(&grant.path, &other.path) {
        return false;
    }
    let same = lies_within(&other.path, &grant.path);
    other.mode > grant.mode || (other.mode == grant.mode && (!same || j < i))
}

/// A warning for an allow entry (or workspace) that grants `$HOME` itself
/// or one of its ancestors: every secret under it becomes reachable.
fn home_warnings(
    inputs: &Inputs<'_>,
    grants: &[Grant],
    real_home: Option<&Path>,
) -> Vec<Diagnostic> {
    let Some(home) = real_home else {
        return Vec::new();
    };
    let exposing = grants
        .iter()
        .filter(|g| home.starts_with(&g.path) && !matches!(g.source, GrantSource::Builtin(_)));
    exposing
        .map(|g| {
            let message = format!(
                "{} grants `{}`, which holds your whole home directory (~/.ssh, ~/.aws, ...)",
                g.source,
                g.path.display()
            );
            let d = Diagnostic::warning(message)
                .with_path(g.path.display().to_string())
                .with_help("grant only the directories a spell needs, e.g. `~/.cargo`");
            let location = match &g.source {
                GrantSource::Config { line, column, .. } => entry_location(inputs, *line, *column),
                _ => None,
            };
            with_location(d, location)
        })
        .collect()
}

/// Passthrough cannot re-admit the daemon socket; say so where it is tried.
fn passthrough_warnings(inputs: &Inputs<'_>, sandbox: &SandboxConfig) -> Vec<Diagnostic> {
    let daemon = EnvPattern::Exact(DAEMON_SOCKET_VAR.to_string());
    sandbox
        .passthrough
        .iter()
        .filter(|p| p.pattern == daemon)
        .map(|p| {
            let d = Diagnostic::warning(format!(
                "passthrough `{DAEMON_SOCKET_VAR}` has no effect: the daemon socket is always withheld from sandboxed children"
            ))
            .with_code(Code::Mgs2008)
            .with_help("remove this entry");
            with_location(d, entry_location(inputs, p.at.line, p.at.column))
        })
        .collect()
}

/// One grant per path; the greater mode wins, and among equal modes the
/// first declared (built-ins come before `magus.yaml` entries). Also
/// returned: the entries a built-in the jail makes the run's own (`/tmp`,
/// `/dev/shm`, `$TMPDIR`) stood in for, which a run without the jail
/// grants as declared (`Policy::without_jail`).
fn dedupe(grants: Vec<Grant>) -> (Vec<Grant>, Vec<Grant>) {
    let mut out: Vec<Grant> = Vec::with_capacity(grants.len());
    let mut stood_in = Vec::new();
    for grant in grants {
        let same =
            |o: &Grant| lies_within(&o.path, &grant.path) && lies_within(&grant.path, &o.path);
        match out.iter_mut().find(|o| same(o)) {
            Some(existing) if grant.mode > existing.mode => *existing = grant,
            Some(existing) if existing.is_fresh_tmpfs() => stood_in.push(grant),
            Some(_) => {}
            None => out.push(grant),
        }
    }
    (out, stood_in)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::policy::config::Position;

    #[test]
    fn credential_stores_inside_grants_are_hidden_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        for rel in [".cargo/registry", ".ssh", "dotfiles/config/op"] {
            std::fs::create_dir_all(home.join(rel)).unwrap();
        }
        std::fs::write(home.join(".cargo/credentials.toml"), "t").unwrap();
        std::os::unix::fs::symlink("dotfiles/config", home.join(".config")).unwrap();
        std::os::unix::fs::symlink("/nowhere", home.join(".npmrc")).unwrap();
        // `stow`'s two layouts: a store that is a link into `dotfiles`,
        // and a store whose files are links into it.
        std::fs::create_dir_all(home.join("dotfiles/aws/.aws")).unwrap();
        std::os::unix::fs::symlink("dotfiles/aws/.aws", home.join(".aws")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles/kube")).unwrap();
        std::fs::write(home.join("dotfiles/kube/config"), "k").unwrap();
        std::fs::create_dir_all(home.join(".kube/sub")).unwrap();
        std::os::unix::fs::symlink("../../dotfiles/kube/config", home.join(".kube/sub/config"))
            .unwrap();
        let grant = |rel: &str| Grant {
            path: home.join(rel),
            mode: Mode::Rw,
            source: GrantSource::Workspace,
        };
        let hidden = |grants: &[Grant]| hidden_stores(grants, Some(&home));
        assert_eq!(
            hidden(&[grant(".cargo")]),
            [home.join(".cargo/credentials.toml")]
        );
        assert_eq!(hidden(&[grant(".cargo/registry")]), Vec::<PathBuf>::new());
        assert_eq!(hidden(&[grant(".ssh")]), Vec::<PathBuf>::new());
        assert_eq!(
            hidden(&[grant("dotfiles")]),
            [
                home.join("dotfiles/aws/.aws"),
                home.join("dotfiles/config/op"),
                home.join("dotfiles/kube/config"),
            ]
        );
        // A link inside a store into what only a built-in grant shows (a
        // program in `/usr`) hides nothing.
        std::fs::create_dir_all(home.join("usr/libexec")).unwrap();
        std::fs::write(home.join("usr/libexec/docker-compose"), "elf").unwrap();
        std::fs::create_dir_all(home.join(".docker/cli-plugins")).unwrap();
        std::os::unix::fs::symlink(
            home.join("usr/libexec/docker-compose"),
            home.join(".docker/cli-plugins/docker-compose"),
        )
        .unwrap();
        let system = Grant {
            path: home.join("usr"),
            mode: Mode::Ro,
            source: GrantSource::Builtin("system programs"),
        };
        assert_eq!(hidden(&[system]), Vec::<PathBuf>::new());
        // Named: the store's link, resolved as grants are.
        assert_eq!(
            hidden(&[grant("dotfiles"), grant("dotfiles/aws/.aws")]).len(),
            2
        );
        let mut want = vec![
            home.join(".ssh"),
            home.join(".cargo/credentials.toml"),
            home.join(".docker"),
            home.join(".kube"),
            home.join("dotfiles/aws/.aws"),
            home.join("dotfiles/config/op"),
            home.join("dotfiles/kube/config"),
            // Shown by a grant of the user's, here all of home.
            home.join("usr/libexec/docker-compose"),
        ];
        want.sort();
        assert_eq!(hidden(&[grant("")]), want);
        assert_eq!(hidden(&[grant(""), grant(".ssh")]).len(), 7);
    }

    /// Windows' built-ins sit below the environment's variables, and are
    /// left out when the variable is unset or not absolute.
    #[test]
    fn windows_builtins_expand_their_variable() {
        use super::super::builtin::WINDOWS_RO;
        let env = |pairs: &[(&str, &str)]| -> Vec<(OsString, OsString)> {
            pairs.iter().map(|(n, v)| (n.into(), v.into())).collect()
        };
        let system = &WINDOWS_RO[0];
        let x86 = &WINDOWS_RO[3];
        let set = env(&[("SystemRoot", "/win"), ("ProgramFiles(x86)", "/pf86")]);
        assert_eq!(
            builtin_path(system, &set),
            Some(PathBuf::from("/win/System32"))
        );
        assert_eq!(builtin_path(x86, &set), Some(PathBuf::from("/pf86")));
        assert_eq!(builtin_path(system, &env(&[])), None);
        assert_eq!(builtin_path(system, &env(&[("SystemRoot", "win")])), None);
        assert_eq!(
            builtin_path(&BUILTIN_RO[0], &set),
            Some(PathBuf::from("/usr"))
        );
    }

    fn entry(path: &str, mode: Mode, line: u32) -> AllowEntry {
        AllowEntry {
            path: path.into(),
            mode,
            at: Position { line, column: 13 },
            spell: None,
        }
    }

    fn run(
        home: &Path,
        ws: &Path,
        allow: Vec<AllowEntry>,
        env_extra: &[(&str, &Path)],
    ) -> Resolution {
        let sandbox = SandboxConfig {
            allow,
            ..SandboxConfig::default()
        };
        let mut env: Vec<(OsString, OsString)> = vec![("HOME".into(), home.into())];
        env.extend(
            env_extra
                .iter()
                .map(|(n, v)| (OsString::from(n), v.as_os_str().to_owned())),
        );
        let file = ws.join("magus.yaml");
        resolve(&Inputs {
            workspace: ws,
            config_file: Some(&file),
            sandbox: Some(&sandbox),
            env: &env,
        })
    }

    /// A scratch directory outside `/tmp`, which is itself granted `rw`:
    /// under `target/`, or `/var/tmp` when the checkout is under `/tmp`.
    fn scratch() -> tempfile::TempDir {
        let mut base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
        std::fs::create_dir_all(&base).unwrap();
        if base.canonicalize().unwrap().starts_with("/tmp") {
            base = Path::new("/var/tmp/magus-sandbox-tests").to_path_buf();
            std::fs::create_dir_all(&base).unwrap();
        }
        tempfile::tempdir_in(base).unwrap()
    }

    fn mode_of(r: &Resolution, path: &Path) -> Option<Mode> {
        r.grants.iter().find(|g| g.path == path).map(|g| g.mode)
    }

    #[test]
    fn entries_resolve_skip_and_collapse() {
        let dir = scratch();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home"), root.join("ws"));
        std::fs::create_dir_all(home.join(".cargo")).unwrap();
        std::fs::create_dir_all(ws.join("tools/sub")).unwrap();
        std::os::unix::fs::symlink(home.join(".cargo"), ws.join("link")).unwrap();
        let r = run(
            &home,
            &ws,
            vec![
                entry("~/.cargo", Mode::Rw, 5),
                entry("~/missing", Mode::Ro, 7),
                entry("tools/sub", Mode::Ro, 9),
                entry("link", Mode::Ro, 11),
                entry("~bob/x", Mode::Ro, 13),
            ],
            &[],
        );
        assert_eq!(mode_of(&r, &home.join(".cargo")), Some(Mode::Rw));
        assert_eq!(mode_of(&r, &ws), Some(Mode::Rw));
        assert_eq!(
            mode_of(&r, &Path::new("/tmp").canonicalize().unwrap()),
            Some(Mode::Rw)
        );
        let skipped: Vec<_> = r
            .diagnostics
            .iter()
            .filter(|d| d.code == Some(Code::Mgs2004))
            .collect();
        assert_eq!(skipped.len(), 2, "{:?}", r.diagnostics);
        assert!(
            skipped[0].message.contains("`~/missing`")
                && skipped[0].message.contains("does not exist")
        );
        assert_eq!(skipped[0].location.as_ref().unwrap().line, 7);
        assert!(skipped[1].message.contains("another user's home"));
        let covered: Vec<_> = r
            .diagnostics
            .iter()
            .filter(|d| d.message.contains("adds nothing"))
            .collect();
        assert_eq!(covered.len(), 2, "{:?}", r.diagnostics);
        assert!(covered[0].message.contains("`tools/sub` (ro)"));
        assert!(
            covered[1].message.contains("`link` (ro)"),
            "{}",
            covered[1].message
        );
        assert_eq!(
            r.grants
                .iter()
                .filter(|g| g.path == home.join(".cargo"))
                .count(),
            1
        );
    }

    #[test]
    fn unset_home_skips_tilde_entries() {
        let dir = scratch();
        let ws = dir.path().canonicalize().unwrap();
        let sandbox = SandboxConfig {
            allow: vec![entry("~/.cargo", Mode::Rw, 4)],
            ..SandboxConfig::default()
        };
        let r = resolve(&Inputs {
            workspace: &ws,
            config_file: None,
            sandbox: Some(&sandbox),
            env: &[],
        });
        assert_eq!(r.diagnostics.len(), 1);
        assert!(r.diagnostics[0].message.contains("HOME is not set"));
    }

    #[test]
    fn tmpdir_equal_to_home_is_not_granted() {
        let dir = scratch();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home"), root.join("ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let r = run(&home, &ws, vec![], &[("TMPDIR", &home)]);
        assert_eq!(mode_of(&r, &home), None);
        assert!(r
            .diagnostics
            .iter()
            .any(|d| d.message.contains("whole home")));
    }

    #[test]
    fn granting_home_is_warned() {
        let dir = scratch();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home"), root.join("ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let r = run(&home, &ws, vec![entry("~", Mode::Ro, 3)], &[]);
        assert_eq!(mode_of(&r, &home), Some(Mode::Ro));
        assert!(r
            .diagnostics
            .iter()
            .any(|d| d.message.contains("whole home directory")));
    }

    /// A link in the workspace that leads outside every writable place is
    /// not followed; one that stays inside the workspace, or a link
    /// outside any writable place, is.
    #[test]
    fn a_link_in_a_writable_place_cannot_lead_a_grant_out() {
        let dir = scratch();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws, opt) = (root.join("home"), root.join("ws"), root.join("opt"));
        for d in [&home.join(".ssh"), &ws.join("real"), &opt.join("sdk")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&home, ws.join("data")).unwrap();
        std::os::unix::fs::symlink("real", ws.join("inner")).unwrap();
        std::os::unix::fs::symlink(opt.join("sdk"), root.join("sdk-link")).unwrap();
        let entries = vec![
            entry("data", Mode::Ro, 3),
            entry("data/.ssh", Mode::Ro, 4),
            entry("inner", Mode::Ro, 5),
            entry(root.join("sdk-link").to_str().unwrap(), Mode::Ro, 6),
        ];
        let r = run(&home, &ws, entries, &[]);
        assert_eq!(mode_of(&r, &home), None, "{:?}", r.grants);
        assert_eq!(mode_of(&r, &home.join(".ssh")), None, "{:?}", r.grants);
        let planted: Vec<_> = r
            .diagnostics
            .iter()
            .filter(|d| {
                d.message
                    .contains("a symbolic link in a directory that spells can")
            })
            .collect();
        assert_eq!(planted.len(), 2, "{:?}", r.diagnostics);
        assert_eq!(
            mode_of(&r, &opt.join("sdk")),
            Some(Mode::Ro),
            "{:?}",
            r.grants
        );
    }
}
