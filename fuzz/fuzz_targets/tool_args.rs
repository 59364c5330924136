//! cargo-fuzz's `tool_args` target: the body is `chataigne_fuzz_targets::tool_args` (fuzz-targets/), which
//! the workspace's tests also run over every input of fuzz/regressions/tool_args/.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chataigne_fuzz_targets::tool_args(data));
