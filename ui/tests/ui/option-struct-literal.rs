use std::time::Duration;

use tool_contract::dispatch::ToolOptions;

// Options are built with their `with_*` methods, so that a field added later breaks no one.
const SLOW: ToolOptions = ToolOptions {
    timeout: Duration::from_secs(120),
    ..ToolOptions::DEFAULT
};

fn main() {
    let _ = SLOW;
}
