//! Fuzz target `privacy`: the body is `entries::privacy` (fuzz/entries.rs), which the stable replay
//! `tests/fuzz_corpus.rs` runs over the committed corpus too.
#![no_main]

#[path = "../entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::privacy(data));
