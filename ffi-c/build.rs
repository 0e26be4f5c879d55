//! Give libtelha_jobs.so a SONAME carrying the ABI version, so programs
//! record `libtelha_jobs.so.1` and a future incompatible library
//! (`TJ_ABI_VERSION` 3) installs beside it instead of breaking them.

fn main() {
    // Keep in step with TJ_ABI_VERSION in src/lib.rs (a unit test checks it).
    const ABI: u32 = 3;
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtelha_jobs.so.{ABI}");
    }
    println!("cargo:rustc-env=TJ_SONAME_ABI={ABI}");
    println!("cargo:rerun-if-changed=build.rs");
}
