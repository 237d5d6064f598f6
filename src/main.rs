fn main() {
    std::process::exit(magus_sandbox::cli::main());
}
