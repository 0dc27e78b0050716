//! The figures of `validate_output` and `project` as instruction counts, which do not move
//! with the machine's load: `benches/callgrind.sh` runs this under `valgrind --tool=callgrind`
//! twice per case, with two repetition counts, and divides the difference.
//!
//! `callgrind CASE REPETITIONS` runs `CASE` that many times after its setup; run any other
//! way (as `cargo bench` does), it does nothing.

#![allow(missing_docs)]

mod common;

use std::hint::black_box;

use common::{GetShipment, PlainShipment, PlainShipmentView, ResultPath, ShipmentView};
use tool_contract::ToolContract;
use tool_contract::vocabulary::ForbiddenKeys;

fn repeat(times: u64, mut run: impl FnMut()) {
    for _ in 0..times {
        run();
    }
}

fn validate(case: &str, times: u64) -> bool {
    let bytes = common::document();
    let call = GetShipment {
        shipment_ref: "SHP-2026-11-29-0042".to_owned(),
    };
    let schema = common::shipment_schema();
    match case {
        "validate_tool_contract" => repeat(times, || {
            black_box(call.validate_output(black_box(&bytes)).is_ok());
        }),
        "validate_serde_json" => repeat(times, || {
            black_box(serde_json::from_slice::<PlainShipment>(black_box(&bytes)).is_ok());
        }),
        "validate_sonic_rs" => repeat(times, || {
            black_box(sonic_rs::from_slice::<PlainShipment>(black_box(&bytes)).is_ok());
        }),
        "validate_simd_json" => repeat(times, || {
            let mut copy = black_box(&bytes).clone();
            black_box(simd_json::serde::from_slice::<PlainShipment>(&mut copy).is_ok());
        }),
        "borrowed_tool_contract" => repeat(times, || {
            let view = call.validate_output_borrowed::<ShipmentView<'_>>(
                black_box(&bytes),
                &ForbiddenKeys::DEFAULT,
            );
            black_box(view.is_ok());
        }),
        "borrowed_sonic_rs" => repeat(times, || {
            black_box(sonic_rs::from_slice::<PlainShipmentView<'_>>(black_box(&bytes)).is_ok());
        }),
        "borrowed_simd_json" => repeat(times, || {
            let mut copy = black_box(&bytes).clone();
            black_box(simd_json::serde::from_slice::<PlainShipmentView<'_>>(&mut copy).is_ok());
        }),
        "validate_value_jsonschema" => repeat(times, || {
            let value: serde_json::Value =
                serde_json::from_slice(black_box(&bytes)).expect("valid JSON");
            black_box(schema.is_valid(&value));
        }),
        _ => return false,
    }
    true
}

fn result_path(case: &str, times: u64) -> bool {
    let Some((kind, label)) = case.rsplit_once('_') else {
        return false;
    };
    let Some((items, _)) = common::SIZES.iter().find(|(_, size)| *size == label) else {
        return false;
    };
    let path = ResultPath::new();
    let bytes = serde_json::to_vec(&common::stock(*items)).expect("a Value encodes");
    let raw = path.raw(&bytes);
    match kind {
        "path_tool_contract" => repeat(times, || {
            black_box(path.tool_contract(black_box(raw.clone())));
        }),
        "path_floor" => repeat(times, || {
            black_box(ResultPath::floor(black_box(&bytes)));
        }),
        "path_off_the_shelf" => repeat(times, || {
            black_box(path.off_the_shelf(black_box(&bytes)));
        }),
        "path_raw_clone" => repeat(times, || {
            black_box(raw.clone());
        }),
        _ => return false,
    }
    true
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [case, times] = arguments.as_slice() else {
        return;
    };
    let Ok(times) = times.parse::<u64>() else {
        return;
    };
    if !validate(case, times) && !result_path(case, times) {
        eprintln!("no case {case}");
        std::process::exit(2);
    }
}
