//! `magus sandbox suggest SPELL`: prints the smallest `spells: SPELL:`
//! section of magus.yaml that the spell's literal calls need (see
//! `bindings::foresee`), or says that it needs nothing. Nothing runs.

use super::{declare, GlobalArgs, EXIT_CANNOT_RUN};
use crate::bindings::{foresee, DiagnosticSink};
use crate::diag::Diagnostic;
use crate::policy::SandboxState;
use crate::sandbox::exit::NO_SPELL as EXIT_NO_SPELL;
use crate::sandbox::spell_checker::checking_session;
use crate::sandbox::spell_reader::SpellReader;
use std::ffi::OsString;
use std::io::Write;
use std::rc::Rc;

/// `magus sandbox suggest SPELL`: 0 with the section (or "nothing") on
/// stdout; the status `magus check` would give when the spell cannot be
/// read or parsed.
pub(super) fn suggest(global: &GlobalArgs, env: &[(OsString, OsString)], spell: &str) -> i32 {
    let renderer = global.renderer();
    let startup = match declare(global, env, Some(spell)) {
        Ok(declared) => declared.resolve(env),
        Err(status) => return status,
    };
    let policy = startup.policy.clone();
    let (file, source) = match SpellReader::new(&policy).read_spell(spell) {
        Ok(found) => found,
        Err(e) => {
            renderer.emit(e.diagnostic());
            return e.exit_status();
        }
    };
    let Some(name) = policy.spell_name().map(str::to_string) else {
        renderer.emit(&outside_spells(&file));
        return EXIT_NO_SPELL;
    };
    let program = match crate::buzz::parse(&file, &source) {
        Ok(program) => program,
        Err(e) => {
            renderer.emit(&e.to_diagnostic());
            return EXIT_CANNOT_RUN;
        }
    };
    let sink: DiagnosticSink = Rc::new(move |d: &Diagnostic| renderer.emit(d));
    let session = checking_session(startup.policy, env, sink);
    let text = match policy.state() {
        SandboxState::Off => format!(
            "the sandbox is off in this workspace: spell `{name}` is refused nothing, \
             so it needs no `spells: {name}:` section\n"
        ),
        SandboxState::On => section(&name, &foresee::suggest(&program, &session), &session),
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    0
}

/// The section to paste, or why none is needed.
fn section(name: &str, found: &foresee::Suggestion, session: &crate::bindings::Session) -> String {
    if !found.is_empty() {
        return found.to_yaml(name, session.home());
    }
    let mut text = format!(
        "spell `{name}` needs nothing beyond its policy: the sandbox allows every path, \
         program and variable its literal calls name\n"
    );
    for refused in &found.refused {
        text.push_str(&format!("# not proposed: {refused}\n"));
    }
    text
}

/// A spell file outside `spells/` has no section of its own.
fn outside_spells(file: &std::path::Path) -> Diagnostic {
    Diagnostic::error(format!(
        "`{}` is not a spell of the workspace's `spells/`, so it has no `spells:` section",
        file.display()
    ))
    .with_help("name a spell of `spells/` (`magus list` shows them)")
}
