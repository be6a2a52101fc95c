//! Compiles fleetbot's own Nebius protos (proto/) with tonic, using a vendored protoc.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from("proto");
    let mut files = Vec::new();
    collect(&proto_dir, &mut files)?;
    files.sort();
    // google/rpc/status.proto maps onto tonic_types; it is compiled only to resolve imports.
    files.retain(|p| !p.starts_with(proto_dir.join("google")));
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    println!("cargo:rerun-if-changed=proto");

    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    // `Any` type URLs must be `type.googleapis.com/<package>.<Message>`, as the real API sends.
    config.enable_type_names();
    config.type_name_domain(["."], "type.googleapis.com");
    // The descriptor set lets a test pin every declared number against the upstream table.
    let descriptors = PathBuf::from(std::env::var("OUT_DIR")?).join("nebius_descriptors.bin");
    tonic_prost_build::configure()
        .file_descriptor_set_path(descriptors)
        .build_client(true)
        .build_server(true)
        .extern_path(".google.rpc.Status", "::tonic_types::Status")
        .include_file("mod.rs")
        .compile_with_config(
            config,
            &files,
            &[proto_dir, protoc_bin_vendored::include_path()?],
        )?;
    Ok(())
}

fn collect(dir: &PathBuf, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}
