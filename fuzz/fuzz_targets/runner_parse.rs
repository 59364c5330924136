//! cargo-fuzz's `runner_parse` target: the body is `chataigne_fuzz_targets::runner_parse` (fuzz-targets/), which
//! the workspace's tests also run over every input of fuzz/regressions/runner_parse/.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chataigne_fuzz_targets::runner_parse(data));
