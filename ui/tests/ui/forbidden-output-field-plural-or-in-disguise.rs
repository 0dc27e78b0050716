#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Client {
    name: String,
    access_tokens: Vec<String>,
    #[serde(rename = "ᴛᴏᴋᴇɴ")]
    small_capitals: String,
    #[serde(rename = "🅟🅐🅢🅢🅦🅞🅡🅓")]
    negative_circled: String,
}

fn main() {}
