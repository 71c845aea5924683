//! The `transcope` binary links as a position-dependent executable.
//!
//! Every hook starts a process, and a position-independent one spends a third of its
//! start-up (before `main`) applying 21,000 relocations, each a write that copies a
//! page of the binary's data (benches/README.md, "The Stop with the index"). Linked at
//! a fixed address it has almost none to apply. Only the binary: the library and the
//! tests link as before.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
