//! The AnthropicMessages readers, whole body and stream: a planned turn reads the same both ways, a
//! stream cut short never yields a turn, and every accepted turn is sound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_contract::providers::anthropic::AnthropicMessages;
use tool_contract_fuzz::providers::{Input, anthropic, check};

fuzz_target!(|input: Input| check(&AnthropicMessages, &input, anthropic, true));
