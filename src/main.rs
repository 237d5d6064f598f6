//! The `magus` command line. It starts spells through the library's
//! facade (`magus_sandbox::Sandbox`); its argument parsing and other
//! commands are the package's own, reached through the hidden `__private`.

fn main() {
    std::process::exit(magus_sandbox::__private::cli::main());
}
