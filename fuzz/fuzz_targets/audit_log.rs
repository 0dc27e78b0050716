//! The audit-log reader and chain verifier, on changed copies of a keyed chain: whatever
//! verifies is the chain's first records, unchanged in meaning; a file verifies against the
//! chain's head only if it holds all of them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_contract::control::{JsonLinesAuditLog, verify_chain};
use tool_contract_fuzz::sealed::{canonical_form, fixture};

fuzz_target!(|bytes: &[u8]| {
    let fixture = fixture();
    if let Ok(head) = verify_chain(bytes, &fixture.audit_key) {
        let lines: Vec<&[u8]> = bytes
            .split(|&byte| byte == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .collect();
        assert_eq!(lines.len() as u64, head.records, "records and lines differ");
        for (line, original) in lines.iter().zip(&fixture.log_lines) {
            assert_eq!(
                canonical_form(line),
                canonical_form(original.as_bytes()),
                "a changed record verified"
            );
        }
        if head.records == fixture.log_head.records {
            assert_eq!(head, fixture.log_head);
        }
    }
    // The file reader, against the head kept elsewhere.
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("tool-contract-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("audit.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let _ = std::fs::remove_file(dir.join("audit.jsonl.head"));
    if let Ok(head) = JsonLinesAuditLog::verify(&path, &fixture.audit_key, Some(&fixture.log_head))
    {
        assert_eq!(head, fixture.log_head, "a file short of the head verified");
        assert!(verify_chain(bytes, &fixture.audit_key).is_ok());
    }
});
