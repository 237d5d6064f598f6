//! `import`: upstream's library names (`buzz:std`, `buzz:math`, …), magus's
//! own modules (`fs`, `magus:fs`, …), and the spell's own `.buzz` files by
//! relative path, read through the loader the host gives (the gate), with
//! cycles reported.
//!
//! Upstream libraries magus deliberately lacks get an error naming them.

use super::native::Raise;
use super::value::{Members, ModuleObj, Scope, Value};
use super::{Eval, Interpreter};
use crate::buzz::syntax::ast::Mutability;
use crate::buzz::syntax::import_names::{default_name, library_key, INTERNAL, REFUSED};
use crate::buzz::syntax::lexer::{intern, Pos};
use std::path::{Path, PathBuf};
use std::rc::Rc;

impl Interpreter {
    pub(super) fn import(
        &mut self,
        spec: &str,
        alias: Option<&Rc<str>>,
        names: &[Rc<str>],
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<()> {
        let module = match (self.libraries.get(spec).copied(), library_key(spec)) {
            (Some(source), _) => {
                let path = PathBuf::from(format!("<{spec}>"));
                self.load_module(path, || Ok(source.to_string()), pos)?
            }
            (None, Some(key)) if self.bare_file(spec, key) => {
                match self.import_file(spec, pos) {
                    // No such file either: say what modules there are.
                    Err(flow) if flow.thrown().is_some_and(|t| is_not_found(&t.value)) => {
                        self.library(spec, key, pos)?
                    }
                    other => other?,
                }
            }
            (None, Some(key)) => self.library(spec, key, pos)?,
            (None, None) => self.import_file(spec, pos)?,
        };
        self.bind_import(&module, spec, alias, names, scope, pos)
    }

    /// A bare name (`import "helpers";`) that no module has may be a file
    /// beside the spell, when files can be read at all.
    fn bare_file(&self, spec: &str, key: &str) -> bool {
        self.loader.is_some()
            && !self.modules.contains_key(key)
            && !spec.contains(':')
            && !self.libraries.contains_key(spec)
    }

    fn library(&self, spec: &str, key: &str, pos: Pos) -> Eval<Rc<ModuleObj>> {
        if let Some(found) = self.modules.get(key) {
            return Ok(found.clone());
        }
        if let Some((_, why)) = REFUSED.iter().find(|(name, _)| *name == spec) {
            return Err(self.fail(pos, format!("cannot import `{spec}`: {why}")));
        }
        let mut known: Vec<&str> = self
            .modules
            .keys()
            .chain(self.libraries.keys())
            .map(String::as_str)
            .filter(|name| !INTERNAL.contains(name))
            .collect();
        known.sort_unstable();
        Err(self.fail(
            pos,
            format!("unknown module `{spec}` (available: {})", known.join(", ")),
        ))
    }

    fn bind_import(
        &self,
        module: &Rc<ModuleObj>,
        spec: &str,
        alias: Option<&Rc<str>>,
        names: &[Rc<str>],
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<()> {
        for name in names {
            let Some(v) = module.functions.get(name) else {
                return Err(self.fail(pos, format!("module `{spec}` has no `{name}`")));
            };
            scope.define(name.clone(), v.clone(), Mutability::Final);
        }
        if !names.is_empty() {
            return Ok(());
        }
        match alias.map(|a| &**a) {
            // `as _`: every exported name, unqualified.
            Some("_") => {
                for (name, v) in module.functions.iter() {
                    scope.define(name.clone(), v.clone(), Mutability::Final);
                }
            }
            Some(a) => scope.define(intern(a), Value::Module(module.clone()), Mutability::Final),
            None => {
                let (name, value) = namespaced(module, &self.namespace);
                scope.define(name, value, Mutability::Final);
            }
        }
        Ok(())
    }

    /// `import "lib/common";`: `lib/common.buzz` beside the importing file.
    fn import_file(&mut self, spec: &str, pos: Pos) -> Eval<Rc<ModuleObj>> {
        let relative = if spec.ends_with(".buzz") {
            PathBuf::from(spec)
        } else {
            PathBuf::from(format!("{spec}.buzz"))
        };
        let path = match self.file.parent() {
            Some(dir) => dir.join(relative),
            None => relative,
        };
        let Some(loader) = self.loader.clone() else {
            return Err(self.fail(
                pos,
                format!("cannot import `{spec}`: this interpreter has no file loader"),
            ));
        };
        let read = path.clone();
        self.load_module(path, move || loader(&read), pos)
    }

    /// Runs the module at `path` (read by `read` the first time) and
    /// returns what it exports; a file already being imported is a cycle.
    fn load_module(
        &mut self,
        path: PathBuf,
        read: impl FnOnce() -> Result<String, Raise>,
        pos: Pos,
    ) -> Eval<Rc<ModuleObj>> {
        if let Some(done) = self.loaded.get(&path) {
            return Ok(done.clone());
        }
        if let Some(at) = self.importing.iter().position(|p| *p == path) {
            let cycle: Vec<String> = self.importing[at..]
                .iter()
                .chain(std::iter::once(&path))
                .map(|p| p.display().to_string())
                .collect();
            return Err(self.fail(pos, format!("import cycle: {}", cycle.join(" -> "))));
        }
        let source = read().map_err(|raise| self.raised(raise, pos))?;
        let program = crate::buzz::parse(&path, &source)
            .map_err(|e| super::Flow::from(super::Stop::Error(Box::new(e))))?;
        self.importing.push(path.clone());
        let caller = std::mem::replace(&mut self.file, Rc::from(path.as_path()));
        let caller_ns = std::mem::replace(&mut self.namespace, program.namespace.clone());
        let globals = Scope::new(None);
        self.module_globals.push(globals.clone());
        let result = self.run_declarations(&program, &globals);
        self.file = caller;
        self.namespace = caller_ns;
        self.importing.pop();
        result?;
        let module = Rc::new(exported(&program, &globals, &path));
        self.loaded.insert(path, module.clone());
        Ok(module)
    }
}

/// Whether a loader's raise says the file does not exist.
pub(in crate::buzz) fn is_not_found(v: &Value) -> bool {
    v.type_name() == "FileSystemError"
        && v.field("message")
            .is_some_and(|m| m.to_string().contains("No such file"))
}

/// The name an import binds and its value: `namespace a\b\c;` binds `a`
/// to modules nested down to the file's own, so `a\b\c\name` reaches it.
/// A prefix the importer's own namespace shares is left out, as upstream
/// does (`commom\part` importing `commom\part\here` sees `here\…`).
fn namespaced(module: &Rc<ModuleObj>, own: &[Rc<str>]) -> (Rc<str>, Value) {
    let mut value = Value::Module(module.clone());
    let shared = module
        .namespace
        .iter()
        .zip(own)
        .take_while(|(a, b)| a == b)
        .count()
        .min(module.namespace.len().saturating_sub(1));
    let Some((first, inner)) = module.namespace[shared..].split_first() else {
        return (intern(default_name(&module.name)), value);
    };
    for (i, segment) in inner.iter().enumerate().rev() {
        let holder = if i == 0 { first } else { &inner[i - 1] };
        let mut functions = Members::default();
        functions.insert(segment.clone(), value);
        value = Value::Module(Rc::new(ModuleObj {
            name: holder.clone(),
            functions,
            namespace: Vec::new(),
        }));
    }
    (first.clone(), value)
}

/// What an imported file shows: its `export`ed names, or every top-level
/// declaration when it exports nothing.
fn exported(
    program: &crate::buzz::syntax::ast::Program,
    globals: &Rc<Scope>,
    path: &Path,
) -> ModuleObj {
    let names = program.visible_names();
    let mut functions = Members::default();
    for name in names {
        if let Some(v) = super::names::lookup(globals, &name) {
            functions.insert(name.clone(), v);
        }
    }
    let name = program
        .namespace
        .last()
        .cloned()
        .unwrap_or_else(|| Rc::from(default_name(&path.to_string_lossy())));
    ModuleObj {
        name,
        functions,
        namespace: program.namespace.clone(),
    }
}
