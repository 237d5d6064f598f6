//! `import` in the checker: the same resolution as the interpreter's
//! (`buzz/vm/imports.rs`) but, instead of running a file, checking it and
//! taking the types of what it exports. Files are read through the host's
//! loader (the gate), so a check reads nothing a run could not.

use super::super::syntax::import_names::{default_name, library_key, INTERNAL, REFUSED};
use super::super::syntax::lexer::Pos;
use super::super::vm::imports::is_not_found;
use super::scope::BindingKind;
use super::ty::{ModuleInfo, Ty};
use super::{nearest, CheckError, Cx};
use std::path::PathBuf;
use std::rc::Rc;

impl Cx<'_, '_> {
    pub(super) fn import(
        &mut self,
        spec: &str,
        alias: Option<&Rc<str>>,
        names: &[Rc<str>],
        pos: Pos,
    ) {
        let module = self.resolve(spec, pos);
        self.bind(module.as_ref(), spec, alias, names, pos);
    }

    fn resolve(&mut self, spec: &str, pos: Pos) -> Option<Rc<ModuleInfo>> {
        let env = self.checker.env;
        if let Some(source) = env.libraries.get(spec) {
            let path = PathBuf::from(format!("<{spec}>"));
            self.checker.quiet += 1;
            let module = self.load(path, Ok((*source).to_string()), pos);
            self.checker.quiet -= 1;
            return module;
        }
        match library_key(spec) {
            Some(key) if env.natives.contains_key(key) => env.natives.get(key).cloned(),
            Some(key) if !spec.contains(':') && env.loader.is_some() => {
                let path = self.beside(spec);
                match self.read(&path) {
                    Err(raise) if is_not_found(&raise.value) => self.library(spec, key, pos),
                    read => self.load(path, read, pos),
                }
            }
            Some(key) => self.library(spec, key, pos),
            None => {
                let path = self.beside(spec);
                let read = self.read(&path);
                self.load(path, read, pos)
            }
        }
    }

    /// `lib/common` as a path beside the importing file.
    fn beside(&self, spec: &str) -> PathBuf {
        let relative = if spec.ends_with(".buzz") {
            PathBuf::from(spec)
        } else {
            PathBuf::from(format!("{spec}.buzz"))
        };
        match self.file.parent() {
            Some(dir) => dir.join(relative),
            None => relative,
        }
    }

    fn read(&self, path: &std::path::Path) -> Result<String, super::super::Raise> {
        match &self.checker.env.loader {
            Some(loader) => loader(path),
            None => Err(super::super::Raise::new(format!(
                "{} cannot be read: this check has no file loader",
                path.display()
            ))),
        }
    }

    fn library(&mut self, spec: &str, key: &str, pos: Pos) -> Option<Rc<ModuleInfo>> {
        if let Some(found) = self.checker.env.natives.get(key) {
            return Some(found.clone());
        }
        let mut near = None;
        let why = match REFUSED.iter().find(|(name, _)| *name == spec) {
            Some((_, why)) => (*why).to_string(),
            None => {
                let env = self.checker.env;
                let mut known: Vec<&str> = env
                    .natives
                    .keys()
                    .chain(env.libraries.keys())
                    .map(String::as_str)
                    .filter(|n| !INTERNAL.contains(n))
                    .collect();
                known.sort_unstable();
                // `buzz:std` is the native `std`: offer both spellings.
                let spellings: Vec<String> = known
                    .iter()
                    .flat_map(|k| [k.to_string(), format!("buzz:{k}")])
                    .collect();
                near = nearest(spec, spellings.iter().map(String::as_str));
                format!("no such module (available: {})", known.join(", "))
            }
        };
        let error = CheckError::Import {
            spec: spec.to_string(),
            why,
            near,
        };
        self.report(error, pos, 6);
        None
    }

    /// Checks the file at `path` once and returns its exports.
    fn load(
        &mut self,
        path: PathBuf,
        read: Result<String, super::super::Raise>,
        pos: Pos,
    ) -> Option<Rc<ModuleInfo>> {
        if let Some(done) = self.checker.loaded.get(&path) {
            return Some(done.clone());
        }
        if let Some(at) = self.checker.importing.iter().position(|p| *p == path) {
            let chain: Vec<String> = self.checker.importing[at..]
                .iter()
                .chain(std::iter::once(&path))
                .map(|p| p.display().to_string())
                .collect();
            let why = format!("import cycle: {}", chain.join(" -> "));
            let spec = path.display().to_string();
            let error = CheckError::Import {
                spec,
                why,
                near: None,
            };
            self.report(error, pos, 6);
            return None;
        }
        let source = match read {
            Ok(source) => source,
            Err(raise) => return self.unreadable(&path, raise, pos),
        };
        let program = match super::super::parse(&path, &source) {
            Ok(program) => program,
            Err(e) => {
                if self.checker.quiet == 0 {
                    self.checker.report.other.push(e.to_diagnostic());
                }
                return None;
            }
        };
        let module = self.checker.file(&program, &source, false);
        self.checker.loaded.insert(path, module.clone());
        Some(module)
    }

    /// A file the loader refused (a sandbox denial keeps its own code).
    fn unreadable(
        &mut self,
        path: &std::path::Path,
        raise: super::super::Raise,
        pos: Pos,
    ) -> Option<Rc<ModuleInfo>> {
        let denial = raise.diagnostic.as_ref().is_some_and(|d| d.code.is_some());
        if let (true, Some(mut d)) = (denial, raise.diagnostic.map(|d| *d)) {
            if d.location.is_none() {
                d.location = Some(crate::diag::Location {
                    kind: crate::diag::SourceKind::Spell,
                    file: self.file.to_path_buf(),
                    line: pos.line,
                    column: pos.column,
                });
            }
            self.checker.report.other.push(d);
            return None;
        }
        let why = raise.value.to_string();
        let spec = path.display().to_string();
        let error = CheckError::Import {
            spec,
            why,
            near: None,
        };
        self.report(error, pos, 6);
        None
    }

    /// Binds what an import makes visible, as the interpreter does.
    fn bind(
        &mut self,
        module: Option<&Rc<ModuleInfo>>,
        spec: &str,
        alias: Option<&Rc<str>>,
        names: &[Rc<str>],
        pos: Pos,
    ) {
        let global = |cx: &mut Self, name: Rc<str>, ty: Ty| {
            cx.scopes.declare_global(name, ty, BindingKind::Declaration)
        };
        let Some(module) = module else {
            self.open_names |= alias.is_some_and(|a| &**a == "_");
            for n in names.iter().chain(alias) {
                global(self, n.clone(), Ty::Unknown);
            }
            if alias.is_none() && names.is_empty() {
                global(self, Rc::from(default_name(spec)), Ty::Unknown);
            }
            return;
        };
        for name in names {
            let ty = match module.members.get(&**name) {
                Some(t) => t.clone(),
                None => {
                    self.unknown_import(module, name, pos);
                    Ty::Unknown
                }
            };
            self.import_type(name, &ty);
            self.imported_name(name.clone(), pos);
            global(self, name.clone(), ty);
        }
        if !names.is_empty() {
            return;
        }
        match alias.map(|a| &**a) {
            Some("_") => {
                for (name, ty) in &module.members {
                    self.import_type(name, ty);
                    global(self, Rc::from(name.as_str()), ty.clone());
                }
            }
            Some(a) => {
                self.imported_name(Rc::from(a), pos);
                global(self, Rc::from(a), Ty::Module(module.clone()));
            }
            None => {
                self.namespace_free(module, spec, pos);
                let (name, ty) = self.namespaced(module);
                self.imported_name(name.clone(), pos);
                global(self, name, ty);
            }
        }
    }

    /// Two imports may not expose one namespace, nor may an import
    /// expose the importer's own (upstream's rule).
    fn namespace_free(&mut self, module: &ModuleInfo, spec: &str, pos: Pos) {
        if module.namespace.is_empty() {
            return;
        }
        let shown = format!("{}\\", module.namespace.join("\\"));
        let why = if module.namespace == self.namespace {
            format!("the namespace `{shown}` already exists: it is this file's own")
        } else if self.exposed.contains(&module.namespace) {
            format!("the namespace `{shown}` is already exposed by another import")
        } else {
            self.exposed.push(module.namespace.clone());
            return;
        };
        let error = CheckError::Import {
            spec: spec.to_string(),
            why,
            near: None,
        };
        self.report(error, pos, 6);
    }

    fn unknown_import(&mut self, module: &ModuleInfo, name: &str, pos: Pos) {
        let near = nearest(name, module.members.keys().map(String::as_str));
        let error = CheckError::UnknownMember {
            owner: format!("module `{}`", module.name),
            name: name.to_string(),
            near,
        };
        let at = self.spot(pos, name);
        self.report(error, at, name.chars().count());
    }

    /// An object or enum imported by name may be used as a type.
    fn import_type(&mut self, name: &str, ty: &Ty) {
        if let Ty::Class(_) | Ty::Enum(_) = ty {
            self.types
                .imported
                .borrow_mut()
                .insert(Rc::from(name), ty.clone());
        }
    }

    /// The name an unaliased import binds: its namespace's first segment
    /// not shared with the importer's own (nested ones are left unknown).
    fn namespaced(&self, module: &Rc<ModuleInfo>) -> (Rc<str>, Ty) {
        let shared = module
            .namespace
            .iter()
            .zip(&self.namespace)
            .take_while(|(a, b)| a == b)
            .count()
            .min(module.namespace.len().saturating_sub(1));
        match module.namespace[shared..].split_first() {
            None => (
                Rc::from(default_name(&module.name)),
                Ty::Module(module.clone()),
            ),
            Some((first, [])) => (first.clone(), Ty::Module(module.clone())),
            Some((first, _)) => (first.clone(), Ty::Unknown),
        }
    }
}
