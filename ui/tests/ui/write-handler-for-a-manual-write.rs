use tool_contract::dispatch::{Dispatcher, HandlerContext, ToolOptions};
use tool_contract::{AuditKeys, RawResult, SecretKey, ToolFailure};

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Sent {
    ok: bool,
}

/// Read the outbox.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Sent, effect = read_only, source_label = "mail", producer_revision = "1")]
struct ReadOutbox {
    to: String,
}

/// Send a mail: a person checks a lost answer.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Sent, effect = non_idempotent_write, operation = same_arguments, approval = by_caller, reconcile = manual, source_label = "mail", producer_revision = "1")]
struct SendMail {
    to: String,
}

async fn send(_: SendMail, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    Err(ToolFailure::new(tool_contract::FailureKind::Failed, "offline"))
}

fn main() {
    let keys = AuditKeys::new(SecretKey::new([7; 32]).unwrap());
    let _ = Dispatcher::builder(tool_contract::registry![SendMail, ReadOutbox], keys)
        .write_handler(
            send,
            |mail: &SendMail| ReadOutbox { to: mail.to.clone() },
            ToolOptions::DEFAULT,
        );
}
