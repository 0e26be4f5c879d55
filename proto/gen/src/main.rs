//! `telha-jobs-proto-gen [OUT_DIR]`: compiles `proto/telha/jobs/v1/jobs.proto`
//! (relative to the repository root, the working directory) with protox and
//! writes the prost + tonic code to OUT_DIR (default `proto/src/gen`), with
//! `jobs.proto.fnv64`, the hash of the .proto it was generated from (the
//! proto crate's drift test compares it with the .proto's current hash).

fn fnv64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "proto/src/gen".into());
    std::fs::create_dir_all(&out)?;
    let src = std::fs::read("proto/telha/jobs/v1/jobs.proto")?;
    let fds = protox::compile(["telha/jobs/v1/jobs.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .out_dir(&out)
        .compile_fds(fds)?;
    std::fs::write(format!("{out}/jobs.proto.fnv64"), format!("{:016x}\n", fnv64(&src)))?;
    println!("wrote {out}/telha.jobs.v1.rs");
    Ok(())
}
