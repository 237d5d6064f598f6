//! The state one run's bindings share: the gate, the kernel domain children
//! nest in, the environment children will get, and the notes that are
//! said once per run.

use crate::diag::Diagnostic;
use crate::enforce::gate::Gate;
use crate::enforce::Domain;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Where diagnostics raised during a run (notes, warnings) go.
pub type DiagnosticSink = std::rc::Rc<dyn Fn(&Diagnostic)>;

/// Everything the `fs`, `sh` and `env` bindings of one run share.
pub struct Session {
    gate: Gate,
    domain: Domain,
    /// The environment every child gets, as the spell sees it.
    env: RefCell<BTreeMap<OsString, OsString>>,
    home: Option<PathBuf>,
    /// Notes due at the first launch (MGS2003, MGS2008), said once.
    launch_notes: RefCell<Vec<Diagnostic>>,
    launched: Cell<bool>,
    sink: DiagnosticSink,
}

impl Session {
    /// A session. `env` is the child environment (already scrubbed when
    /// the sandbox is on); `launch_notes` are emitted before the first child.
    pub fn new(
        gate: Gate,
        domain: Domain,
        env: Vec<(OsString, OsString)>,
        launch_notes: Vec<Diagnostic>,
        sink: DiagnosticSink,
    ) -> Session {
        let env: BTreeMap<_, _> = env.into_iter().collect();
        let home = env.get(OsStr::new("HOME")).map(PathBuf::from);
        Session {
            gate,
            domain,
            env: RefCell::new(env),
            home,
            launch_notes: RefCell::new(launch_notes),
            launched: Cell::new(false),
            sink,
        }
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    pub(super) fn domain(&self) -> &Domain {
        &self.domain
    }

    /// `$HOME`, for `~` in suggested fixes.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    pub(super) fn env_get(&self, name: &str) -> Option<String> {
        let env = self.env.borrow();
        let value = env.get(OsStr::new(name))?;
        Some(value.to_string_lossy().into_owned())
    }

    pub(super) fn env_set(&self, name: &str, value: &str) {
        self.env.borrow_mut().insert(name.into(), value.into());
    }

    pub(super) fn env_names(&self) -> Vec<String> {
        let env = self.env.borrow();
        env.keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect()
    }

    /// The whole child environment.
    pub(super) fn child_env(&self) -> Vec<(OsString, OsString)> {
        let env = self.env.borrow();
        env.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    pub(super) fn child_path(&self) -> Option<OsString> {
        self.env.borrow().get(OsStr::new("PATH")).cloned()
    }

    /// Says the once-per-run launch notes, the first time only.
    pub(super) fn before_launch(&self) {
        if self.launched.replace(true) {
            return;
        }
        for note in self.launch_notes.borrow_mut().drain(..) {
            self.emit(&note);
        }
    }

    pub(super) fn emit(&self, diagnostic: &Diagnostic) {
        (self.sink)(diagnostic);
    }
}
