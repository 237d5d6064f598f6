mod kernel_support;
fn main() {
    kernel_support::main_with("kernel_differential", &[]);
}
