//! Generated Nebius API types, clients and server traits (from proto/, see build.rs).

#![allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]

include!(concat!(env!("OUT_DIR"), "/mod.rs"));

/// The `FileDescriptorSet` of every file in proto/ (with imports and their options): read at
/// run time by [`super::schema`], and by the test that compares the declared numbers and names
/// with the upstream definitions.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/nebius_descriptors.bin"));
