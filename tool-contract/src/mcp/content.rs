//! How a verified result is shown to the client as content blocks: its canonical JSON as
//! text, or what the application's view makes of the verified data.

use std::sync::Arc;

use rmcp::model::ContentBlock;
use serde_json::Value;

use crate::contract::ToolSpec;

/// An application's view of a tool's verified data as content blocks; `None` keeps the
/// canonical JSON.
pub(super) type ContentView =
    Arc<dyn Fn(&ToolSpec, &Value) -> Option<Vec<ContentBlock>> + Send + Sync>;

/// The content blocks of a result: for a succeeded one, what `view` makes of its `data`
/// when it makes something; otherwise (a failure's recovery, a tool the view passes over)
/// the result's canonical JSON as one text block.
pub(super) fn blocks(
    view: Option<&ContentView>,
    spec: Option<&ToolSpec>,
    succeeded: bool,
    model: &Value,
    canonical: &str,
) -> Vec<ContentBlock> {
    let viewed = match (view, spec, model.get("data")) {
        (Some(view), Some(spec), Some(data)) if succeeded => view(spec, data),
        _ => None,
    };
    viewed.unwrap_or_else(|| vec![ContentBlock::text(canonical)])
}
