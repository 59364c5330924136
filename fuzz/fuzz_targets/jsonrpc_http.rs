//! cargo-fuzz's `jsonrpc_http` target: the body is `chataigne_fuzz_targets::jsonrpc_http` (fuzz-targets/), which
//! the workspace's tests also run over every input of fuzz/regressions/jsonrpc_http/.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chataigne_fuzz_targets::jsonrpc_http(data));
