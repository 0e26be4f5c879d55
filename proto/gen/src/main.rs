//! `telha-jobs-proto-gen [OUT_DIR]`: compiles the protocol's .proto files
//! (relative to the repository root, the working directory) with protox and
//! writes the prost + tonic code to OUT_DIR (default `proto/src/gen`), with
//! the hash of each .proto it was generated from (`jobs.proto.fnv64`,
//! `raft.proto.fnv64`, `admin.proto.fnv64`: the proto crate's drift test compares them with the
//! .protos' current hashes).

fn fnv64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Each package's .protos (under `proto/`), compiled together (one
/// package, one generated file), each with the name of its hash file.
const PACKAGES: [&[(&str, &str)]; 2] = [
    &[("telha/jobs/v1/jobs.proto", "jobs.proto.fnv64")],
    &[
        ("telha/cluster/v1/raft.proto", "raft.proto.fnv64"),
        ("telha/cluster/v1/admin.proto", "admin.proto.fnv64"),
    ],
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "proto/src/gen".into());
    std::fs::create_dir_all(&out)?;
    for package in PACKAGES {
        let fds = protox::compile(package.iter().map(|(p, _)| p), ["proto"])?;
        tonic_prost_build::configure()
            .build_client(true)
            .build_server(true)
            .out_dir(&out)
            .compile_fds(fds)?;
        for (proto, hash) in package {
            let src = std::fs::read(format!("proto/{proto}"))?;
            std::fs::write(format!("{out}/{hash}"), format!("{:016x}\n", fnv64(&src)))?;
            println!("wrote {out}/ for {proto}");
        }
    }
    Ok(())
}
