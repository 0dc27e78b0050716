//! RFC 8785 canonicalization, on any bytes: its output is a fixed point, and equals a second,
//! independent path (serde_json's reading, written by serde_jcs) wherever that path can read
//! the input exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_contract::json::canonical;

fuzz_target!(|bytes: &[u8]| {
    let Ok(ours) = canonical::canonicalize(bytes) else {
        return;
    };
    let again = canonical::canonicalize(&ours).expect("canonical output is valid JSON");
    assert_eq!(ours, again, "canonical output is not a fixed point");
    // serde_json keeps the last of duplicate keys (we refuse them), so it is compared only on
    // what we accepted.
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) {
        let theirs = serde_jcs::to_vec(&value).expect("serde_jcs writes what serde_json read");
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "two canonicalizers disagree"
        );
    }
});
