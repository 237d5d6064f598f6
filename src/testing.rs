//! The window into the internals for this package's own benches, fuzz
//! targets and kernel test harness (the `internals` feature): only what
//! they use, by name, under the paths they had. Not API: anything here
//! may change or vanish in any release.

#![allow(missing_docs)]

pub mod buzz {
    pub use crate::buzz::{parse, Interpreter, Program};

    /// Runs `f` on the interpreter's own large-stack thread, as `magus run`
    /// runs spells, with the stack budget that thread allows: `f` is given
    /// the budget to pass to `Interpreter::with_stack_budget`. `None` when
    /// the thread cannot be made; a panic in `f` is resumed here.
    pub fn on_interpreter_stack<T: Send>(f: impl FnOnce(usize) -> T + Send) -> Option<T> {
        use crate::buzz::stack;
        let budget = stack::stack_budget(stack::interpreter_stack());
        stack::run_on_interpreter_stack(move || f(budget)).ok()
    }

    /// The live heap bytes the memory budget counts, process-wide: a
    /// harness running many programs in one process (the `run` fuzz
    /// target) sets each run's budget above what earlier runs left.
    pub fn heap_in_use() -> usize {
        crate::buzz::heap::in_use()
    }
}

pub mod bindings {
    pub use crate::bindings::{modules, DiagnosticSink, Session};
}

pub mod enforce {
    #[cfg(kernel_layer)]
    pub use crate::enforce::{
        install_on_self, reexec_scrubbed, take_reexec_state, Domain, JailPlan, LandlockRequest,
        SyscallGuard, Unavailable, UsernsRequest, ViewInputs,
    };
    pub use crate::enforce::{ChildStdio, ConfinedCommand, EnforceError};

    pub mod beneath {
        pub use crate::enforce::beneath::{BeneathError, Follow, Root};
    }
    pub mod gate {
        pub use crate::enforce::gate::{Gate, WriteMode};
    }
    #[cfg(kernel_layer)]
    pub mod jail {
        pub use crate::enforce::jail::enter;
    }
    #[cfg(kernel_layer)]
    pub mod landlock {
        pub use crate::enforce::landlock::Unavailable;
    }
    #[cfg(kernel_layer)]
    pub mod leftovers {
        pub use crate::enforce::leftovers::{Executables, Inputs, Watch};
    }
    #[cfg(kernel_layer)]
    pub mod network {
        pub use crate::enforce::network::{enter, NetworkSeccomp};
    }
    #[cfg(kernel_layer)]
    pub mod seccomp {
        pub use crate::enforce::seccomp::GuardMode;
    }
}

pub mod policy {
    use crate::policy::EnvPattern;
    use std::path::PathBuf;

    pub use crate::policy::{
        normalize, startup, Access, ChildEnv, Grant, GrantSource, HostList, HostRule, Mode,
        Network, NormalPath, PathTrie, Policy, SandboxState, StartupInput, WorkspaceArg,
    };

    #[cfg(kernel_layer)]
    pub use crate::policy::config::Position;
    #[cfg(kernel_layer)]
    pub use crate::policy::secrets::{SecretBinding, SecretSource};

    pub mod config {
        pub use crate::policy::config::parse_config;
    }
    pub mod hosts {
        pub use crate::policy::hosts::normalize_host;
    }
    pub mod reference {
        pub use crate::policy::reference::check;
    }

    /// `Policy::new`, the crate's own: a policy from resolved grants, for
    /// the benches and the kernel harness.
    pub fn new_policy(
        state: SandboxState,
        workspace: PathBuf,
        grants: Vec<Grant>,
        network: Network,
        passthrough: Vec<EnvPattern>,
    ) -> Policy {
        Policy::new(state, workspace, grants, network, passthrough)
    }
}

#[cfg(kernel_layer)]
pub mod proxy {
    pub use crate::proxy::Proxy;

    pub mod vault {
        pub use crate::proxy::vault::Vault;
    }

    pub mod request {
        pub use crate::proxy::request::{
            authority, read_http_head, read_socks_greeting, read_socks_request, Advance, BodyEnd,
            Head,
        };
    }
}
