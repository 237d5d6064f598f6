//! The state one run's bindings share: the gate, the kernel domain children
//! nest in, the environment children will get, and the notes that are
//! said once per run.

#[cfg(kernel_layer)]
use super::egress;
use super::scratch::TempDirs;
use crate::buzz::CallSite;
use crate::diag::{Diagnostic, MessageFormat};
use crate::enforce::gate::{Denial, FsOp, Gate};
use crate::enforce::Domain;
#[cfg(kernel_layer)]
use crate::proxy::{EgressSummary, Proxy};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Where diagnostics raised during a run (notes, warnings) go.
pub type DiagnosticSink = std::rc::Rc<dyn Fn(&Diagnostic)>;

/// A note due when a launched program lies in one of `dirs` (a version
/// manager's shims or root: MGS2006); said once.
#[derive(Debug, Clone)]
pub struct ShimNote {
    pub dirs: Vec<PathBuf>,
    pub diagnostic: Diagnostic,
}

impl ShimNote {
    fn covers(&self, program: &Path) -> bool {
        self.dirs.iter().any(|d| program.starts_with(d))
    }
}

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
    /// MGS2006 notes, each with whether it has been said.
    shim_notes: RefCell<Vec<(ShimNote, bool)>>,
    /// Whether `/tmp` and the like are the run's own (see `scratch`).
    pub(super) temp_dirs: Cell<TempDirs>,
    sink: DiagnosticSink,
    /// How the run's diagnostics are printed: in JSON, a child's output
    /// is relayed as JSON lines too.
    format: MessageFormat,
    /// The host-filtering proxy, when `network.hosts` is in force.
    #[cfg(kernel_layer)]
    egress: RefCell<Option<Proxy>>,
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
        let home = home_of(&env);
        Session {
            gate,
            domain,
            env: RefCell::new(env),
            home,
            launch_notes: RefCell::new(launch_notes),
            launched: Cell::new(false),
            shim_notes: RefCell::new(Vec::new()),
            temp_dirs: Cell::new(TempDirs::Host),
            sink,
            format: MessageFormat::Human,
            #[cfg(kernel_layer)]
            egress: RefCell::new(None),
        }
    }

    /// How the run's diagnostics are printed (`--message-format`).
    pub fn with_message_format(mut self, format: MessageFormat) -> Session {
        self.format = format;
        self
    }

    /// How the run's diagnostics are printed.
    pub(crate) fn message_format(&self) -> MessageFormat {
        self.format
    }

    /// The MGS2006 notes to say when a launch meets a shim.
    pub fn with_shim_notes(self, notes: Vec<ShimNote>) -> Session {
        *self.shim_notes.borrow_mut() = notes.into_iter().map(|n| (n, false)).collect();
        self
    }

    /// Where the run's temporary directories are: the run's own in a jail
    /// of its own, whose writes there by `fs.*` get a note once.
    pub fn with_temp_dirs(self, temp_dirs: TempDirs) -> Session {
        self.temp_dirs.set(temp_dirs);
        self
    }

    /// The proxy whose refusals the `sh.*` calls report (MGS2011).
    #[cfg(kernel_layer)]
    pub fn with_egress(self, proxy: Option<Proxy>) -> Session {
        *self.egress.borrow_mut() = proxy;
        self
    }

    /// After a `sh.*` call: MGS2011 for each host (and port) its children
    /// were refused, once however often they asked.
    #[cfg(kernel_layer)]
    pub(super) fn after_call(&self, site: &CallSite) {
        let refusals = match self.egress.borrow_mut().as_mut() {
            Some(proxy) => proxy.take_to_say(),
            None => return,
        };
        for d in egress::diagnostics(&refusals, Some(site)) {
            self.emit(&d);
        }
    }

    /// Without the kernel layer there is no proxy, so nothing to report.
    #[cfg(not(kernel_layer))]
    pub(super) fn after_call(&self, _site: &CallSite) {}

    /// Before a launch: the proxy gets its listeners, if it has not yet;
    /// a deferred one is forked then (`Proxy::hand_over`), so a run that
    /// starts no program never forks one.
    #[cfg(kernel_layer)]
    pub(super) fn proxy_ready(&self) -> Result<(), String> {
        match self.egress.borrow_mut().as_mut() {
            Some(proxy) => proxy
                .hand_over()
                .map_err(|e| format!("cannot start the network proxy: {e}")),
            None => Ok(()),
        }
    }

    /// Without the kernel layer there is no proxy.
    #[cfg(not(kernel_layer))]
    pub(super) fn proxy_ready(&self) -> Result<(), String> {
        Ok(())
    }

    /// Stops the proxy at the end of the run: MGS2011 for refusals no call
    /// has reported yet (a background child's), and the egress summary.
    #[cfg(kernel_layer)]
    pub fn finish_egress(&self) -> Option<EgressSummary> {
        let proxy = self.egress.borrow_mut().take()?;
        let (summary, refusals) = proxy.finish(self.launched.get());
        for d in egress::diagnostics(&refusals, None) {
            self.emit(&d);
        }
        Some(summary)
    }

    /// The fix of the version manager `program` belongs to, if any.
    pub(super) fn shim_fix(&self, program: &Path) -> Option<String> {
        let notes = self.shim_notes.borrow();
        let (note, _) = notes.iter().find(|(n, _)| n.covers(program))?;
        note.diagnostic.help.clone()
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    pub(super) fn domain(&self) -> &Domain {
        &self.domain
    }

    /// `$HOME`, for `~` in suggested fixes (on Windows as the policy
    /// spells paths, so it compares with a denial's).
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The spell whose policy this is, when it is one of the workspace's:
    /// a denial's help names its `spells:` section.
    pub fn spell_name(&self) -> Option<&str> {
        self.gate.policy().spell_name()
    }

    /// How `denial` reads to the user in this run: the fix names the
    /// spell's own section, and a refused program behind a version
    /// manager's shim points at the manager's fix (MGS2006's), since
    /// granting the shim alone does not make it work.
    pub fn denial_diagnostic(&self, denial: &Denial) -> Diagnostic {
        let mut d = denial.to_diagnostic_in(self.home(), self.spell_name());
        if let Some(note) = self.withheld_temp_note(denial) {
            d = d.with_note(note);
        }
        let fix = (denial.op == FsOp::Exec)
            .then(|| self.shim_fix(&denial.checked))
            .flatten();
        match fix {
            Some(fix) => d.with_help(fix),
            None => d,
        }
    }

    /// Why a path in the host's `/tmp`, `/dev/shm` or `$TMPDIR` is refused
    /// in a run with no jail of its own, and where the run's temporary
    /// files go instead (`policy::unjailed`).
    fn withheld_temp_note(&self, denial: &Denial) -> Option<String> {
        let policy = self.gate.policy();
        let real = denial.leads_to.as_deref().unwrap_or(&denial.checked);
        let host = policy.withheld_temp(real)?;
        let instead = match policy.run_temp() {
            Some(dir) => format!(
                "; this run's temporary files go in `$TMPDIR` (`{}`), removed when it ends",
                dir.display()
            ),
            None => String::new(),
        };
        Some(format!(
            "with no jail of its own (user namespaces are refused), this run is not given \
             the host's `{}`, which holds other sessions' files{instead}",
            host.display()
        ))
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
        let env = self.env.borrow();
        if cfg!(windows) {
            // Windows' names are case-insensitive; its `PATH` is often `Path`.
            let path = env.iter().find(|(n, _)| n.eq_ignore_ascii_case("PATH"));
            return path.map(|(_, v)| v.clone());
        }
        env.get(OsStr::new("PATH")).cloned()
    }

    /// Says the once-per-run launch notes the first time, and the MGS2006
    /// note of the version manager the program belongs to the first time
    /// one of its programs is launched. `program` holds where it was found
    /// on `PATH` and the path it is started by, which differ where the
    /// jail hides the `PATH` directory (the shim is started by its target).
    pub(super) fn before_launch(&self, program: &[&Path]) {
        if !self.launched.replace(true) {
            for note in self.launch_notes.borrow_mut().drain(..) {
                self.emit(&note);
            }
        }
        let due: Vec<Diagnostic> = self
            .shim_notes
            .borrow_mut()
            .iter_mut()
            .filter(|(note, said)| !said && program.iter().any(|p| note.covers(p)))
            .map(|(note, said)| {
                *said = true;
                note.diagnostic.clone()
            })
            .collect();
        for note in &due {
            self.emit(note);
        }
    }

    pub(super) fn emit(&self, diagnostic: &Diagnostic) {
        (self.sink)(diagnostic);
    }
}

/// `$HOME`; on Windows, where it is rarely set, `%USERPROFILE%`, as a
/// policy key (`/c:/users/me`) so credential stores in it are recognised.
fn home_of(env: &BTreeMap<OsString, OsString>) -> Option<PathBuf> {
    let home = env.get(OsStr::new("HOME"));
    #[cfg(windows)]
    let home = home.or_else(|| env.get(OsStr::new("USERPROFILE")));
    let home = PathBuf::from(home?);
    #[cfg(windows)]
    let home = crate::policy::native::from_os(&home).ok()?.into_path_buf();
    Some(home)
}
