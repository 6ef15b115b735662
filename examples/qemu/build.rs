//! Puts `memory.x` on the linker path and tells the firmware its target.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("memory.x is readable");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    let target = env::var("TARGET").expect("cargo sets TARGET");
    println!("cargo:rustc-env=DINAH_TARGET={target}");
}
