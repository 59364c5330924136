//! cargo-fuzz's `cursor_decode` target: the body is `chataigne_fuzz_targets::cursor_decode` (fuzz-targets/), which
//! the workspace's tests also run over every input of fuzz/regressions/cursor_decode/.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chataigne_fuzz_targets::cursor_decode(data));
