#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Draft {
    draft_ref: String,
}

/// Read a refund draft.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Draft, effect = read_only, source_label = "refunds", producer_revision = "1")]
struct GetRefundDraft {
    draft_ref: String,
}

/// Create a refund draft.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Draft, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
                reconcile = GetRefundDraft, source_label = "refunds", producer_revision = "1")]
struct CreateRefundDraft {
    order_ref: String,
}

/// Send a note by hand-checked mail.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Draft, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = manual, source_label = "mail", producer_revision = "1")]
struct SendNote {
    text: String,
}

/// Tag an order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Draft, effect = idempotent_write, operation = same_arguments, approval = not_required,
                source_label = "orders", producer_revision = "1", name = "tag-order")]
struct TagOrder {
    order_ref: String,
}

#[test]
fn writes_with_approval_and_reconcile_register() {
    let _registry = tool_contract::registry![GetRefundDraft, CreateRefundDraft, SendNote, TagOrder];
}
