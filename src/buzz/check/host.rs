//! What the checker takes from the interpreter that will run the spell:
//! the native modules it has (their members' names), the libraries written
//! in Buzz, and the loader that reads the spell's own files through the
//! gate. Checking with the very table the run uses keeps the two in step.

use super::super::syntax::ast::Program;
use super::super::vm::native::SourceLoader;
use super::super::vm::value::{Members, Value};
use super::super::vm::Interpreter;
use super::ty::{ModuleInfo, Ty};
use super::{natives, Checker, Report};
use std::collections::HashMap;
use std::rc::Rc;

/// The modules and files a check can see.
pub(crate) struct Env {
    pub natives: HashMap<String, Rc<ModuleInfo>>,
    pub libraries: HashMap<String, &'static str>,
    pub loader: Option<SourceLoader>,
}

impl Env {
    /// Whether `name` is a module that an `import` would bring.
    pub(super) fn is_module(&self, name: &str) -> bool {
        self.natives.contains_key(name)
    }
}

impl Interpreter {
    /// Checks `program` (whose text is `source`) and every file it
    /// imports, without running anything.
    pub fn check(&self, program: &Program, source: &str) -> Report {
        let env = Env {
            natives: self
                .modules
                .iter()
                .map(|(key, m)| (key.clone(), Rc::new(native_info(&m.name, &m.functions))))
                .collect(),
            libraries: self.libraries.clone(),
            loader: self.loader.clone(),
        };
        let mut checker = Checker::new(&env);
        checker.file(program, source, true);
        checker.report
    }
}

fn native_info(name: &str, members: &Members) -> ModuleInfo {
    let members = members
        .iter()
        .map(|(member, value)| {
            let ty = match value {
                Value::Native(_) => Ty::Fun(Rc::new(natives::signature(name, member))),
                _ => Ty::Unknown,
            };
            (member.to_string(), ty)
        })
        .collect();
    ModuleInfo {
        name: name.to_string(),
        members,
        namespace: Vec::new(),
    }
}
