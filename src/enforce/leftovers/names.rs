//! The names the sweep looks for, and how they are compared: as the file
//! system may compare them (ASCII case folded, so `.GIT` or `Magus.Yaml`
//! on a case-insensitive disk is caught), never as raw bytes alone.

use std::ffi::OsStr;
use std::path::Path;

/// Files anywhere under a writable grant that a tool later obeys without
/// asking: git reads `.gitmodules` at `git submodule update` (a
/// `update = !command`), cargo every `.cargo/config*` above the directory it
/// runs in, npm and yarn their rc files (scripts, registries, `node`
/// paths; yarn 1's `.yarnrc` `yarn-path`, a script it runs instead of
/// itself at every `yarn`), pnpm `.pnpmfile.cjs` (hooks run at `pnpm
/// install`), bun `bunfig.toml` (`preload` scripts at `bun run` and `bun
/// test`), direnv `.envrc` (shell code, run at `cd` once allowed), mise
/// its configs (`[hooks]` and `env._.source` run at `cd`; mise trusts a
/// config by its path, not its content, so a trusted one changed runs
/// unasked; a `[tools]` version `path:DIR` needs no trust at all and puts
/// `DIR/bin` first in `PATH`), mise and asdf `.tool-versions` (the same
/// `path:DIR` versions, never asked about: `node` in the workspace runs
/// `DIR/bin/node`), uv `uv.toml` (read in the project and above it: its
/// `python-downloads-json-url` lists Python builds, addresses and hashes
/// its own, that `uv run` installs and runs), editor agents `.mcp.json`, `.claude.json`,
/// `opencode.json` and `opencode.jsonc`, Crush's `crush.json` and
/// `.crush.json` (servers started as programs), aider's `.aider.conf.yml`
/// (its `lint-cmd` and `test-cmd` run), ripgrep `.ripgreprc`
/// (flags such as `--pre COMMAND`), Docker Compose its `.env` (usually
/// ignored by git: its `COMPOSE_FILE` chooses the compose files, hence what
/// containers `docker compose up` starts, with which mounts and
/// privileges; its variables fill in the compose file) and the override
/// files it merges unasked, a dev container's `.devcontainer.json` (its
/// `initializeCommand` runs on the host when the editor reopens the
/// folder in the container, or at `devcontainer up`), rustup its
/// `rust-toolchain.toml` and older `rust-toolchain` (read in the directory
/// it runs in and above it: a `path` toolchain is a directory whose `bin/`
/// runs in place of `cargo` and `rustc`, unasked, at `cargo fmt
/// --version` as at a build, and when an editor or a prompt asks the
/// version), the prompts that read a start-up file from the directory
/// they start in (irb the first of `~/.irbrc` and `./.irbrc`, `irb.rc`,
/// `_irbrc`, `$irbrc`; pry `./.pryrc`; R `./.Rprofile`, and `./.Renviron`,
/// whose `R_PROFILE_USER` names another; GHCi `./.ghci`; Octave
/// `./.octaverc`; pdb `./.pdbrc`, run at `python3 -m pdb`, and Perl's
/// debugger `./.perldb`, at `perl -de0`: `rails console` in a project
/// runs its `.irbrc`), mise's `.miserc.toml` (its `env` turns on a
/// `mise.ENV.toml`, whose `path:` versions run unasked), pnpm's other
/// hooks file `.pnpmfile.mjs` and `pnpm-workspace.yaml` (its `pnpmfile`
/// names one: both ran at `pnpm ls`), the linters and formatters an
/// editor runs when a file opens or is saved, whose own config files load
/// code (pylint's `init-hook`, mypy's `plugins` and `python_executable`,
/// flake8's `local-plugins`, prettier's `plugins`, rubocop's `require`,
/// ESLint's and prettier's configs in JavaScript: each ran at the tool's
/// plain run on a file, in a red-team run of 2026-12-08), GNU make's
/// `GNUmakefile` (read before a tracked `Makefile`, at a plain `make`);
/// a second red-team run (2026-12-08) added more of the same kinds, each
/// run by its real tool: Elixir's `.iex.exs` (at `iex`), byebug's
/// `.byebugrc` (its `edit` command goes to a shell), the code-loading
/// configs of SQLFluff, Ansible (`ansible.cfg`'s callback plugins, at
/// `ansible localhost -m ping`), ESLint's legacy JSON and YAML configs,
/// Stylelint, markdownlint-cli2, remark, cspell (VS Code's spell checker),
/// PHP_CodeSniffer, luacheck and coverage.py, bazelisk's `.bazeliskrc`
/// (its `BAZELISK_HOME` chooses the Bazel `bazel version` runs), and a
/// module `ipykernel_launcher.py`, which every Jupyter kernel started in
/// its directory imports in place of the real one; magus its own policy.
/// The tools whose configs come in many forms are matched by how the
/// names begin instead ([`RUN_LATER_PREFIXES`]).
pub(super) const RUN_LATER_FILES: [&str; 69] = [
    ".gitmodules",
    ".npmrc",
    ".yarnrc.yml",
    ".yarnrc",
    ".pnpmfile.cjs",
    "bunfig.toml",
    ".envrc",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".tool-versions",
    "uv.toml",
    ".mcp.json",
    ".claude.json",
    "opencode.json",
    "opencode.jsonc",
    ".aider.conf.yml",
    "crush.json",
    ".crush.json",
    ".ripgreprc",
    ".env",
    "compose.override.yaml",
    "compose.override.yml",
    "docker-compose.override.yaml",
    "docker-compose.override.yml",
    ".devcontainer.json",
    "rust-toolchain.toml",
    "rust-toolchain",
    ".irbrc",
    "irb.rc",
    "_irbrc",
    "$irbrc",
    ".pryrc",
    ".Rprofile",
    ".Renviron",
    ".ghci",
    ".octaverc",
    ".pdbrc",
    ".perldb",
    ".miserc.toml",
    "miserc.toml",
    ".miserc.local.toml",
    ".pnpmfile.mjs",
    "pnpm-workspace.yaml",
    "mypy.ini",
    ".mypy.ini",
    ".flake8",
    ".rubocop.yml",
    "GNUmakefile",
    ".iex.exs",
    ".byebugrc",
    ".sqlfluff",
    "ansible.cfg",
    ".phpcs.xml",
    "phpcs.xml",
    ".phpcs.xml.dist",
    "phpcs.xml.dist",
    ".luacheckrc",
    ".coveragerc",
    ".bazeliskrc",
    "ipykernel_launcher.py",
    ".rubocop",
    ".rubocop_todo.yml",
    ".yardopts",
    ".latexmkrc",
    "latexmkrc",
    "magus.yaml",
    "magus.lock",
];

/// Families of names, by how they begin: each tool reads its config under
/// many names (a JavaScript, TypeScript, JSON or YAML form, with or
/// without a leading dot), and any of them loads code: prettier's and
/// Stylelint's plugins, ESLint's configs and parsers, cspell's imports,
/// markdownlint's and remark's rules and plugins, pylint's `init-hook`
/// (a third red-team run, 2026-12-08, found `cspell.jsonc`,
/// `.cspell.yaml`, `.markdownlint.cjs` and `eslint.config.mts` past a
/// list of whole names).
const RUN_LATER_PREFIXES: [&str; 12] = [
    ".prettierrc",
    "prettier.config.",
    ".eslintrc",
    "eslint.config.",
    ".stylelintrc",
    "stylelint.config.",
    "cspell.",
    ".cspell.",
    ".markdownlint",
    ".remarkrc",
    ".pylintrc",
    "pylintrc",
];

/// The same tools' configs in a project's `.config/` directory, where
/// the loader they share (cosmiconfig) also looks: `stylelintrc.json`,
/// `prettierrc`, `cspell.json` and the like, without the leading dot.
const DOT_CONFIG_PREFIXES: [&str; 5] =
    ["prettier", "stylelint", "cspell", "markdownlint", "remark"];

/// Whether a file named `name` is a run-later file wherever it is
/// ([`RUN_LATER_FILES`], [`RUN_LATER_PREFIXES`]).
pub(super) fn is_run_later_file(name: &OsStr) -> bool {
    is_any(name, &RUN_LATER_FILES) || begins_with_any(name, &RUN_LATER_PREFIXES)
}

/// Whether `name` begins with one of `prefixes`, in any ASCII case.
fn begins_with_any(name: &OsStr, prefixes: &[&str]) -> bool {
    let name = name.as_encoded_bytes();
    prefixes
        .iter()
        .any(|p| name.len() >= p.len() && name[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
}

/// Each tool's own version file, which mise reads as well once the user
/// enables it (`idiomatic_version_file_enable_tools`), taking a
/// `path:DIR` version there as in `.tool-versions`: `DIR/bin` first in
/// `PATH`, unasked. Only one that names such a version, or a link of that
/// name, is a run-later file: a spell may pin a version number.
pub(super) const VERSION_FILES: [&str; 17] = [
    ".node-version",
    ".nvmrc",
    ".python-version",
    ".python-versions",
    ".ruby-version",
    ".go-version",
    ".java-version",
    ".sdkmanrc",
    ".bun-version",
    ".deno-version",
    ".terraform-version",
    ".yvmrc",
    ".swift-version",
    ".zig-version",
    ".crystal-version",
    ".elixir-version",
    ".erlang-version",
];

/// Directories whose every file is a run-later file: editors run the tasks
/// and launch configurations there when a folder opens
/// (`.vscode/tasks.json` with `runOn: folderOpen`) and the language servers
/// their settings name (`.zed/settings.json`, `.helix/languages.toml`), a
/// coding agent the hooks and servers its settings name
/// (`.claude/settings.json`, `.cursor/mcp.json`, `.gemini/settings.json`,
/// Kiro's `.kiro/settings/mcp.json` and `.kiro/hooks/`, Roo Code's
/// `.roo/mcp.json`, Kilo Code's `.kilocode/mcp.json`, Amazon Q's
/// `.amazonq/mcp.json`, Continue's `.continue/mcpServers/`, OpenCode's
/// `.opencode/` (plugins it loads at start-up), Windsurf's
/// `.windsurf/hooks.json`, Codex's `.codex/config.toml`: servers, hooks and
/// plugins are programs the agent starts when the folder opens; added
/// from their documentation, 2026-12-07, not run here),
/// mise the configs of `.mise/` and of `mise/` (`mise/config.toml`,
/// `.config/mise/config.toml`, `.config/mise/conf.d/*.toml`: read like
/// `mise.toml`, their `[tools]` needing no trust), Maven the JVM options
/// and extensions of `.mvn/` (`jvm.config` at any `mvn` command below
/// it, even `mvn -v`: `-agentpath:` loads a library; `./mvnw` runs
/// `.mvn/wrapper/`'s jar),
/// bundler the settings of `.bundle/` (usually ignored by git: its
/// `BUNDLE_GEMFILE` names the Ruby file `bundle install` evaluates), a
/// dev container the `initializeCommand` of `.devcontainer/`'s
/// configurations (run on the host).
pub(super) const RUN_LATER_DIRS: [&str; 20] = [
    ".vscode",
    ".idea",
    ".claude",
    ".cursor",
    ".gemini",
    ".opencode",
    ".windsurf",
    ".codex",
    ".kiro",
    ".roo",
    ".kilocode",
    ".amazonq",
    ".continue",
    ".zed",
    ".helix",
    ".mise",
    "mise",
    ".mvn",
    ".bundle",
    ".devcontainer",
];

/// In a `.yarn` directory, what Yarn 2 and later run themselves: the
/// release a tracked `.yarnrc.yml`'s `yarnPath` names (the global `yarn`
/// hands every command to it, `yarn --version` too: a red-team run
/// rewrote `.yarn/releases/yarn-4.5.0.cjs`), the plugins it loads, and
/// the editor SDKs an editor's TypeScript setting points at. Its
/// `cache/` and `unplugged/` are the packages, as `node_modules/` is.
const YARN_CODE: [&str; 3] = ["releases", "plugins", "sdks"];

/// Where [`YARN_CODE`] lies.
const YARN_DIR: &str = ".yarn";

/// Whether the directory at `path` is one whose every file is a
/// run-later file ([`RUN_LATER_DIRS`], [`YARN_CODE`]).
pub(super) fn is_run_later_dir(path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    is_any(name, &RUN_LATER_DIRS) || in_yarn_dir(path.parent(), name)
}

fn in_yarn_dir(dir: Option<&Path>, name: &OsStr) -> bool {
    is_any(name, &YARN_CODE)
        && dir
            .and_then(Path::file_name)
            .is_some_and(|d| is(d, YARN_DIR))
}

/// Files known by the directory they are in: Bazel's launcher and
/// bazelisk run a workspace's `tools/bazel` in place of Bazel at every
/// `bazel` command (a red-team run, 2026-12-08).
const NESTED_FILES: [(&str, &str); 1] = [("tools", "bazel")];

/// Whether `name` in `dir` is a run-later file by the directory it is
/// in: one of [`NESTED_FILES`], or a tool's config in a `.config/`
/// ([`DOT_CONFIG_PREFIXES`]).
pub(super) fn is_nested_file(dir: &Path, name: &OsStr) -> bool {
    let Some(holder) = dir.file_name() else {
        return false;
    };
    NESTED_FILES
        .iter()
        .any(|(d, n)| is(name, n) && is(holder, d))
        || is(holder, ".config") && begins_with_any(name, &DOT_CONFIG_PREFIXES)
}

/// Where cargo looks for its configuration, in every directory above the
/// one it runs in, and in `CARGO_HOME`.
pub(super) const CARGO_DIR: &str = ".cargo";

/// In a `.cargo` directory, only what cargo reads as configuration.
pub(super) const CARGO_CONFIGS: [&str; 2] = ["config", "config.toml"];

/// What git looks for in a directory before it takes it for a repository:
/// `HEAD`, `objects` and `refs` (it checks the last two with `access`, so
/// any kind of entry counts).
pub(super) const BARE_REPOSITORY: [&str; 3] = ["HEAD", "objects", "refs"];

/// Beside `HEAD`, `objects` and `refs`, what names the commands git runs
/// (`config`: `core.fsmonitor`, `core.hooksPath`...) or another directory
/// whose config and hooks git then uses (`commondir`).
pub(super) const BARE_REPOSITORY_CODE: [&str; 2] = ["config", "commondir"];

/// Where Python keeps the bytecode it compiled from the sources beside
/// it: at `import NAME` it runs `__pycache__/NAME.cpython-3XY.pyc` instead
/// of `NAME.py` when the file's header carries the source's size and
/// modification time, which a child can copy from the source. It does not
/// compare the code with the source. A link of that name sends Python
/// elsewhere, so one is a run-later entry too.
pub(super) const PYCACHE: &str = "__pycache__";

/// How Python names compiled bytecode (`NAME.cpython-312.pyc`,
/// `NAME.cpython-312.opt-1.pyc`).
const BYTECODE_SUFFIX: &str = ".pyc";

/// The modules Python imports from the current directory, when one is
/// there, in place of its own: `python3 -m MODULE`, `python3 -c` and the
/// interactive prompt put that directory first on the module path, so a
/// `venv/__init__.py` there runs at `python3 -m venv .venv`, a
/// `readline.py` at a bare `python3`, a `json.py` at anything that imports
/// `json`; none of these commands runs the project's own code. The names
/// are `sys.stdlib_module_names` of Python 3.10 to 3.13 (less `test`, the
/// interpreter's own test suite, which nothing ordinary imports and
/// projects name their own tests after), and the installers and
/// uploaders run as `python3 -m` (`pip`, `pipx`, `virtualenv`, `twine`).
/// Compared as Python compares them: in their exact case.
pub(super) const PYTHON_MODULES: [&str; 324] = [
    "__future__",
    "_abc",
    "_aix_support",
    "_android_support",
    "_ast",
    "_asyncio",
    "_bisect",
    "_blake2",
    "_bootsubprocess",
    "_bz2",
    "_codecs",
    "_codecs_cn",
    "_codecs_hk",
    "_codecs_iso2022",
    "_codecs_jp",
    "_codecs_kr",
    "_codecs_tw",
    "_collections",
    "_collections_abc",
    "_colorize",
    "_compat_pickle",
    "_compression",
    "_contextvars",
    "_crypt",
    "_csv",
    "_ctypes",
    "_curses",
    "_curses_panel",
    "_datetime",
    "_dbm",
    "_decimal",
    "_elementtree",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "_functools",
    "_gdbm",
    "_hashlib",
    "_heapq",
    "_imp",
    "_interpchannels",
    "_interpqueues",
    "_interpreters",
    "_io",
    "_ios_support",
    "_json",
    "_locale",
    "_lsprof",
    "_lzma",
    "_markupbase",
    "_md5",
    "_msi",
    "_multibytecodec",
    "_multiprocessing",
    "_opcode",
    "_opcode_metadata",
    "_operator",
    "_osx_support",
    "_overlapped",
    "_pickle",
    "_posixshmem",
    "_posixsubprocess",
    "_py_abc",
    "_pydatetime",
    "_pydecimal",
    "_pyio",
    "_pylong",
    "_pyrepl",
    "_queue",
    "_random",
    "_scproxy",
    "_sha1",
    "_sha2",
    "_sha256",
    "_sha3",
    "_sha512",
    "_signal",
    "_sitebuiltins",
    "_socket",
    "_sqlite3",
    "_sre",
    "_ssl",
    "_stat",
    "_statistics",
    "_string",
    "_strptime",
    "_struct",
    "_suggestions",
    "_symtable",
    "_sysconfig",
    "_thread",
    "_threading_local",
    "_tkinter",
    "_tokenize",
    "_tracemalloc",
    "_typing",
    "_uuid",
    "_warnings",
    "_weakref",
    "_weakrefset",
    "_winapi",
    "_wmi",
    "_zoneinfo",
    "abc",
    "aifc",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "binhex",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pip",
    "pipes",
    "pipx",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "twine",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "virtualenv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

/// Whether an entry named `name` is, or holds, run-later files. An
/// existing `__pycache__` counts: a child may rewrite the bytecode in it
/// in place, which changes no directory, so the sweep must look at its
/// files one by one against what was noted.
pub(crate) fn is_run_later(name: &OsStr) -> bool {
    is_run_later_file(name)
        || is_any(name, &VERSION_FILES)
        || is_any(name, &RUN_LATER_DIRS)
        || is(name, CARGO_DIR)
        || is(name, PYCACHE)
}

/// Where installers put Python packages. Bytecode there is left alone:
/// the installed sources beside it are as writable to a run with the
/// grant and run as unconfined at the next import, so setting the
/// bytecode aside would protect nothing, while a virtualenv's tens of
/// thousands of `.pyc` would be noted and compared at every run.
const INSTALLED_PACKAGES: [&str; 2] = ["site-packages", "dist-packages"];

/// Whether `dir` lies in an installed packages directory
/// ([`INSTALLED_PACKAGES`]).
pub(super) fn in_installed_packages(dir: &Path) -> bool {
    dir.components()
        .any(|c| is_any(c.as_os_str(), &INSTALLED_PACKAGES))
}

/// [`is_run_later`] for the entry `name` of the directory `dir`: a
/// `__pycache__` among installed packages is not one, and [`YARN_CODE`]
/// in a `.yarn` and [`NESTED_FILES`] are.
pub(crate) fn is_run_later_in(dir: &Path, name: &OsStr) -> bool {
    let installed_bytecode = is(name, PYCACHE) && in_installed_packages(dir);
    (is_run_later(name) && !installed_bytecode)
        || in_yarn_dir(Some(dir), name)
        || is_nested_file(dir, name)
}

/// Whether a file named `name` in the directory named `dir` is bytecode
/// Python would run at an `import`: a `.pyc` in a `__pycache__`. (A bare
/// `NAME.pyc` beside the sources runs only where no `NAME.py` is, and is
/// then as plain to see as a source file.)
pub(super) fn is_bytecode(dir: &OsStr, name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    is(dir, PYCACHE)
        && name.len() > BYTECODE_SUFFIX.len()
        && name[name.len() - BYTECODE_SUFFIX.len()..]
            .eq_ignore_ascii_case(BYTECODE_SUFFIX.as_bytes())
}

/// The name of a module file as Python imports it: `NAME` of `NAME.py`,
/// of bytecode `NAME.pyc` (imported without a source beside it), and of
/// an extension module `NAME.so` or `NAME.TAG.so`
/// (`NAME.cpython-312-x86_64-linux-gnu.so`, `NAME.abi3.so`).
fn module_stem(name: &OsStr) -> Option<&[u8]> {
    let name = name.as_encoded_bytes();
    let stem = match [".py", ".pyc"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix.as_bytes()))
    {
        Some(stem) if stem.contains(&b'.') => return None,
        Some(stem) => stem,
        None => name.strip_suffix(b".so")?.split(|&b| b == b'.').next()?,
    };
    (!stem.is_empty()).then_some(stem)
}

/// Whether a file named `name` in `dir` is an extension module Python
/// imports in place of the source module beside it: `NAME.so` or
/// `NAME.TAG.so` where `dir` holds `NAME.py` (Python tries extension
/// modules before sources; a red-team run compiled one with `cc` inside
/// the sandbox, and the usual `*.so` in `.gitignore` hid it from `git
/// status`). Installed packages are left alone, as their bytecode is.
pub(super) fn shadows_source(dir: &Path, name: &OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    if !bytes.ends_with(b".so") || in_installed_packages(dir) {
        return false;
    }
    let Some(stem) = module_stem(name) else {
        return false;
    };
    let mut source = stem.to_vec();
    source.extend_from_slice(b".py");
    let source: &OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&source);
    dir.join(source).symlink_metadata().is_ok()
}

/// Whether `name` is one of [`PYTHON_MODULES`] (a package directory, or
/// a link Python would follow to one).
pub(super) fn is_python_module(name: &OsStr) -> bool {
    PYTHON_MODULES
        .iter()
        .any(|m| m.as_bytes() == name.as_encoded_bytes())
}

/// Whether a file named `name`, in the directory Python runs in, is
/// imported in place of one of [`PYTHON_MODULES`].
pub(super) fn is_python_module_file(name: &OsStr) -> bool {
    module_stem(name).is_some_and(|stem| PYTHON_MODULES.iter().any(|m| m.as_bytes() == stem))
}

/// Whether `name` makes its directory a package Python imports: its
/// `__init__` (a directory without one is a namespace package, which
/// Python passes over for the standard library's module of that name).
pub(super) fn is_package_init(name: &OsStr) -> bool {
    module_stem(name).is_some_and(|stem| stem == b"__init__")
}

/// Whether `name` is `wanted`, compared as a case-insensitive file system
/// would (ASCII case only: every name above is ASCII).
pub(super) fn is(name: &OsStr, wanted: &str) -> bool {
    name.as_encoded_bytes()
        .eq_ignore_ascii_case(wanted.as_bytes())
}

/// Whether `name` is one of `wanted`.
pub(super) fn is_any(name: &OsStr, wanted: &[&str]) -> bool {
    wanted.iter().any(|w| is(name, w))
}

/// Whether `text` is a `HEAD` git accepts: a symbolic ref into `refs/`, or
/// an object name (SHA-1 or SHA-256). Anything else makes git refuse the
/// repository and look further up for another.
pub(super) fn is_valid_head(text: &[u8]) -> bool {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    if let Some(target) = text.strip_prefix(b"ref: refs/") {
        return !target.is_empty() && !target.contains(&b'\n');
    }
    matches!(text.len(), 40 | 64) && text.iter().all(u8::is_ascii_hexdigit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_in_any_ascii_case() {
        let cases = [
            (".git", ".git", true),
            (".GIT", ".git", true),
            ("Magus.Yaml", "magus.yaml", true),
            ("magus.yml", "magus.yaml", false),
            ("HEAD", "HEAD", true),
            ("head", "HEAD", true),
            ("HEADS", "HEAD", false),
        ];
        for (name, wanted, expected) in cases {
            assert_eq!(is(OsStr::new(name), wanted), expected, "{name} vs {wanted}");
        }
    }

    #[test]
    fn module_files_are_known_by_the_name_python_imports_them_as() {
        let cases = [
            ("json.py", true),
            ("readline.pyc", true),
            ("readline.cpython-312-x86_64-linux-gnu.so", true),
            ("ssl.abi3.so", true),
            ("json.tool.py", false),
            ("Json.py", false),
            ("test.py", false),
            ("mymodule.py", false),
            (".py", false),
            ("json", false),
        ];
        for (name, expected) in cases {
            assert_eq!(is_python_module_file(OsStr::new(name)), expected, "{name}");
        }
        assert!(is_package_init(OsStr::new("__init__.py")));
        assert!(!is_package_init(OsStr::new("__main__.py")));
        assert!(is_python_module(OsStr::new("venv")) && is_python_module(OsStr::new("pip")));
    }

    #[test]
    fn only_what_git_accepts_is_a_valid_head() {
        let cases: [(&[u8], bool); 7] = [
            (b"ref: refs/heads/main\n", true),
            (b"ref: refs/heads/main", true),
            (b"0123456789abcdef0123456789abcdef01234567\n", true),
            (b"garbage\n", false),
            (b"ref: refs/", false),
            (b"ref: HEAD\n", false),
            (b"", false),
        ];
        for (text, expected) in cases {
            assert_eq!(
                is_valid_head(text),
                expected,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
