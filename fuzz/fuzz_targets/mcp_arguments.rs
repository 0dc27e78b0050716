//! MCP `tools/call` argument handling: the server's reader passes a session on unchanged,
//! however a transport cuts it, and what it keeps of a call's arguments is the client's own
//! bytes of them, in the line that carried that request id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_contract::mcp::__fuzzing::capture;

fuzz_target!(|input: &[u8]| {
    let Some((&piece, session)) = input.split_first() else {
        return;
    };
    let max_line = 4096;
    let (passed, kept) = capture(session, usize::from(piece % 64) + 1, max_line);
    assert_eq!(passed, session, "the reader changed the session");
    // Every newline-terminated line: what a request id's kept arguments may be.
    let lines: Vec<&[u8]> = session.split_inclusive(|&byte| byte == b'\n').collect();
    let mut ids = Vec::new();
    for line in &lines {
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let Some(id) = message.get("id") {
            ids.push(id.clone());
        }
    }
    for id in ids {
        let Some(arguments) = kept.take(&id) else {
            continue;
        };
        let from = lines.iter().any(|line| {
            line.ends_with(b"\n")
                && line.len() <= max_line
                && within(line, &arguments)
                && match serde_json::from_slice::<Value>(line) {
                    Ok(message) => {
                        message.get("id") == Some(&id)
                            && message.get("method") == Some(&Value::from("tools/call"))
                            && serde_json::from_slice::<Value>(&arguments).ok()
                                == Some(
                                    message["params"]
                                        .get("arguments")
                                        .cloned()
                                        .unwrap_or_else(|| serde_json::json!({})),
                                )
                    }
                    // A line serde_json cannot read whole (a lone surrogate outside the
                    // arguments): the kept bytes are still the client's own, and the server
                    // compares them with rmcp's reading of the request before anything runs.
                    Err(_) => true,
                }
        });
        assert!(
            from,
            "kept arguments no line of id {id} sent: {:?}",
            String::from_utf8_lossy(&arguments)
        );
    }
});

/// Whether `part` occurs in `line` as it is (or is the `{}` of a call without arguments).
fn within(line: &[u8], part: &[u8]) -> bool {
    part == b"{}" || line.windows(part.len()).any(|window| window == part)
}
