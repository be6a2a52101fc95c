//! Fuzz target `repo_config`: the body is `entries::repo_config` (fuzz/entries.rs), which the stable replay
//! `tests/fuzz_corpus.rs` runs over the committed corpus too.
#![no_main]

#[path = "../entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::repo_config(data));
