//! `parse_arguments` of a rich contract, on any bytes: whatever it accepts re-encodes to
//! arguments it accepts again, to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| tool_contract_fuzz::check_accepted_arguments(bytes));
