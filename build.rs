//! One cfg for "the Linux kernel layer is built": the `kernel` feature on a
//! Linux target. Code says `#[cfg(kernel_layer)]` instead of repeating both.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(kernel_layer)");
    println!("cargo::rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && std::env::var_os("CARGO_FEATURE_KERNEL").is_some() {
        println!("cargo::rustc-cfg=kernel_layer");
    }
}
