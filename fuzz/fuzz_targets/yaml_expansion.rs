//! Fuzz target `yaml_expansion`: the body is `entries::yaml_expansion` (fuzz/entries.rs), which
//! the stable replay `tests/fuzz_corpus.rs` runs over the committed corpus too.
#![no_main]

#[path = "../entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::yaml_expansion(data));
