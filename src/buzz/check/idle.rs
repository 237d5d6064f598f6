//! Upstream's warnings about what a spell declares and never uses: a
//! local never read, a `var` never assigned (it could be `final`), an
//! import nothing refers to. Warnings (MGS1026): they never stop a run.

use super::super::syntax::lexer::Pos;
use super::{CheckError, Cx};
use std::rc::Rc;

impl Cx<'_, '_> {
    /// Leaves the innermost scope, warning about its idle locals.
    pub(super) fn leave(&mut self) {
        for idle in self.scopes.pop() {
            let error = if idle.unused {
                CheckError::UnusedLocal {
                    name: idle.name.to_string(),
                    ty: idle.ty.to_string(),
                }
            } else {
                CheckError::NeverAssigned {
                    name: idle.name.to_string(),
                }
            };
            let at = self.spot(
                Pos {
                    line: idle.line,
                    column: 1,
                },
                &idle.name,
            );
            self.report(error, at, idle.name.chars().count());
        }
    }

    /// Remembers a name an `import` binds, to warn if nothing reads it.
    pub(super) fn imported_name(&mut self, name: Rc<str>, pos: Pos) {
        self.imports_bound.push((name, pos));
    }

    /// At the end of a file: every import whose name nothing read. A
    /// name written elsewhere in the file (in a type, say `lib\Thing`,
    /// which the checker does not resolve) counts as used.
    pub(super) fn unused_imports(&mut self) {
        for (name, pos) in std::mem::take(&mut self.imports_bound) {
            if self.scopes.global_used(&name) || self.written_elsewhere(&name, pos.line) {
                continue;
            }
            let error = CheckError::UnusedImport {
                name: name.to_string(),
            };
            self.report(error, pos, 6);
        }
    }

    fn written_elsewhere(&self, name: &str, line: u32) -> bool {
        let word = |l: &str| {
            l.match_indices(name).any(|(i, _)| {
                let before = l[..i].chars().next_back();
                let after = l[i + name.len()..].chars().next();
                let edge = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                edge(before) && edge(after)
            })
        };
        self.lines
            .iter()
            .enumerate()
            .any(|(i, l)| i + 1 != line as usize && word(l))
    }
}
