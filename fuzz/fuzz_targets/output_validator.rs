//! The generated output validator of a rich contract, on any bytes: whatever it accepts is
//! what the bytes said, and reads back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_contract_fuzz::{LookUp, call, check_accepted_output};

fuzz_target!(|bytes: &[u8]| {
    static CALL: std::sync::OnceLock<LookUp> = std::sync::OnceLock::new();
    check_accepted_output(bytes, CALL.get_or_init(call));
});
