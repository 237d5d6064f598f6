//! The `magus` command line: the library's documented entry,
//! [`magus_sandbox::cli_main`], which starts spells through the same facade
//! (`magus_sandbox::Sandbox`) an embedder uses.

fn main() {
    std::process::exit(magus_sandbox::cli_main());
}
