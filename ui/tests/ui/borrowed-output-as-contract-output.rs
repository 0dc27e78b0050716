// A contract's output is kept past the bytes it was read from: it must own its data.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct ParcelView<'a> {
    status: &'a str,
}

/// Track a parcel.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = ParcelView<'static>, effect = read_only, source_label = "carrier",
                producer_revision = "carrier-1")]
struct TrackParcel {
    parcel_ref: String,
}

fn main() {}
