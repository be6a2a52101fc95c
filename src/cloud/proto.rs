//! Generated Nebius API types, clients and server traits (from proto/, see build.rs).

#![allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]

include!(concat!(env!("OUT_DIR"), "/mod.rs"));
