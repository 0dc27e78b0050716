//! What a validation allocates, counted by a counting global allocator: the typed output's
//! own strings and vectors, as serde's typed parse of the same bytes allocates them, and
//! nothing per field beyond that (checked fields that are dropped allocate nothing).
//!
//! One test in this binary, so no other test's allocations are counted with it.

use serde::Deserialize;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tool_contract::{ToolContract, ToolOutput};

#[global_allocator]
static COUNTING: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// List the stock of one warehouse.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Stock, effect = read_only, source_label = "warehouse",
                producer_revision = "stock-v3")]
struct ListStock {
    #[tool_contract(max_len = 32)]
    warehouse_ref: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Stock {
    #[tool_output(bound = warehouse_ref)]
    warehouse_ref: String,
    #[tool_output(format = rfc3339_utc)]
    counted_at: String,
    #[tool_output(max_items = 1000)]
    items: Vec<StockItem>,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct StockItem {
    #[tool_output(pattern = "^SKU-[0-9]+$")]
    sku: String,
    #[tool_output(max_len = 80)]
    title: String,
    quantity: u32,
    unit_price: f64,
    state: StockState,
    discontinued: bool,
    #[tool_output(format = https_url)]
    image_url: Option<String>,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
enum StockState {
    InStock,
    Low,
    Out,
}

/// The same fields, read by serde alone: what a typed parse of these bytes allocates.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainStock {
    warehouse_ref: String,
    counted_at: String,
    items: Vec<PlainStockItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainStockItem {
    sku: String,
    title: String,
    quantity: u32,
    unit_price: f64,
    state: PlainState,
    discontinued: bool,
    image_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum PlainState {
    InStock,
    Low,
    Out,
}

fn stock(items: usize) -> Vec<u8> {
    let states = ["in_stock", "low", "out"];
    let items: Vec<serde_json::Value> = (0..items)
        .map(|i| {
            serde_json::json!({
                "sku": format!("SKU-{}", 100_000 + i),
                "title": format!("Stoneware mug, speckled glaze, 350 ml (batch {i})"),
                "quantity": (i * 37) % 500,
                "unit_price": 4.5 + (i as f64) * 0.25,
                "state": states[i % 3],
                "discontinued": i % 7 == 0,
                "image_url": (i % 2 == 0).then(|| format!("https://img.example.com/{i}.jpg")),
            })
        })
        .collect();
    let stock = serde_json::json!({
        "warehouse_ref": "WH-AMS-2",
        "counted_at": "2026-11-29T06:00:00Z",
        "items": items,
    });
    serde_json::to_vec(&stock).unwrap()
}

/// Allocations made by `run`, and its result (dropped after counting). The counter is the
/// process's: another thread allocating meanwhile (the test harness, on a loaded machine) is
/// counted too, never less, so the fewest of three runs is `run`'s own.
fn allocations<T>(run: impl Fn() -> T) -> (usize, T) {
    let once = || {
        let region = Region::new(COUNTING);
        let result = std::hint::black_box(run());
        (region.change().allocations, result)
    };
    let (mut fewest, result) = once();
    for _ in 0..2 {
        fewest = fewest.min(once().0);
    }
    (fewest, result)
}

/// Allocations a validation may make beyond the typed output's, whatever its size.
const FIXED: usize = 2;

#[test]
fn a_validation_allocates_what_serdes_typed_parse_does_and_nothing_per_field_beyond() {
    let call = ListStock {
        warehouse_ref: "WH-AMS-2".to_owned(),
    };
    // Warm the pattern and format checks' lazily built state once, outside the count.
    call.validate_output(&stock(2)).expect("valid");
    let mut counted = Vec::new();
    for items in [10, 200] {
        let bytes = stock(items);
        let (ours, stock) = allocations(|| call.validate_output(&bytes));
        let stock = stock.expect("valid");
        assert_eq!(stock.items.len(), items);
        drop(stock);
        let (serdes, plain) = allocations(|| serde_json::from_slice::<PlainStock>(&bytes));
        assert!(plain.is_ok());
        drop(plain);
        // A few allocations per validation, whatever its size (the reader's own state), and
        // none per field beyond the output's.
        assert!(
            ours <= serdes + FIXED,
            "{items} items: the validator allocated {ours} times, serde's typed parse {serdes}"
        );
        counted.push((items, ours, serdes));
    }
    let [(few, ours_few, serdes_few), (many, ours_many, serdes_many)] = counted[..] else {
        unreachable!("two sizes");
    };
    // Per item: the item's own strings, as serde allocates them, and nothing per field more.
    let per_item = |a: usize, b: usize| (b - a) as f64 / (many - few) as f64;
    let (ours, serdes) = (
        per_item(ours_few, ours_many),
        per_item(serdes_few, serdes_many),
    );
    assert!(
        ours <= serdes,
        "per item: the validator {ours:.2} allocations, serde {serdes:.2}"
    );
    eprintln!(
        "allocations: {few} items {ours_few} (serde {serdes_few}), {many} items {ours_many} \
         (serde {serdes_many}); per item {ours:.2} (serde {serdes:.2})"
    );
}
