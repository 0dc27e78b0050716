#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Credentials {
    region: String,
    aws_secret_access_key: String,
    #[serde(rename = "ｔｏｋｅｎ")]
    fullwidth: String,
}

fn main() {}
