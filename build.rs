//! Compiles fleetbot's own Nebius protos (proto/) with tonic, using a vendored protoc, and the
//! simulator's stand-in NVIDIA driver libraries (fixtures/probe/*.c) as shared objects.

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
    simulated_driver()?;
    Ok(())
}

/// The libraries the simulated GPU nodes' containers load in place of NVIDIA's (see
/// `src/sim/k8s/gpu_hardware.rs`): built with the C compiler the build already needs (ring's),
/// into `$OUT_DIR/simgpu/` under the names the probe opens.
fn simulated_driver() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("simgpu");
    std::fs::create_dir_all(&out)?;
    let compiler = cc::Build::new().get_compiler();
    for (source, library) in [
        ("fake_libcuda.c", "libcuda.so.1"),
        ("fake_libnvml.c", "libnvidia-ml.so.1"),
        ("fake_libEGL.c", "libEGL.so.1"),
        ("fake_libGLX_nvidia.c", "libGLX_nvidia.so.0"),
        ("fake_libvulkan.c", "libvulkan.so.1"),
    ] {
        let source = PathBuf::from("fixtures/probe").join(source);
        println!("cargo:rerun-if-changed={}", source.display());
        let status = compiler
            .to_command()
            .args(["-shared", "-fPIC", "-O1", "-w", "-o"])
            .arg(out.join(library))
            .arg(&source)
            .status()?;
        if !status.success() {
            return Err(format!("compiling {} failed", source.display()).into());
        }
    }
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
