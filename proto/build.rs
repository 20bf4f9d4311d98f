//! Compiles `docket/v1/*.proto` without protoc: protox parses the files into a
//! `FileDescriptorSet`, which is written to `$OUT_DIR/docket_descriptor.bin`
//! (for gRPC reflection) and handed to tonic-prost-build for code generation.

use std::path::PathBuf;

use prost::Message as _;

const PROTO_ROOT: &str = "docket";
const FILES: &[&str] = &[
    "docket/v1/common.proto",
    "docket/v1/ledger.proto",
    "docket/v1/domain.proto",
    "docket/v1/retention.proto",
    "docket/v1/export.proto",
    "docket/v1/admin.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    for file in FILES {
        println!("cargo:rerun-if-changed={file}");
    }

    // Include root is the crate directory (`proto/`), so imports read
    // `docket/v1/common.proto` exactly as clients in other languages use them.
    let fds = protox::compile(FILES, ["."])?;

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("docket_descriptor.bin"), fds.encode_to_vec())?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .emit_rerun_if_changed(false)
        .compile_fds(fds)?;
    Ok(())
}
