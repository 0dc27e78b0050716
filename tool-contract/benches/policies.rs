//! What Cedar policies add to a call, beside the same call with a Rust authorizer, in the
//! same run: a read dispatched with no check, with an `Authorizer` closure, and with 1, 10 and
//! 100 Cedar policies that all apply to it (each evaluated on every call: the worst case, as
//! Cedar's cost grows with the policies it evaluates); and with 100 policies spread over ten
//! tools, ten for each, as a deployment's policies are.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use common::orders::{Discard, GetOrder, Order, get_order};
use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::dispatch::{Dispatcher, DispatcherBuilder, HandlerContext, Task};
use tool_contract::policy::Policies;
use tool_contract::{
    AuditKeys, Principal, RawResult, SecretKey, ToolContract, ToolFailure, ToolSpec,
};

/// Nine more reads beside `get_order`, so that policies can name ten tools.
macro_rules! reads {
    ($($name:ident),*) => {$(
        #[doc = "Read one order another way."]
        #[derive(serde::Deserialize, ToolContract)]
        #[tool_contract(output = Order, effect = read_only, source_label = "orders", producer_revision = "o-1")]
        struct $name {
            #[tool_contract(max_len = 32)]
            #[allow(dead_code)] // The bench calls only get_order.
            order_ref: String,
        }
    )*};
}

reads!(
    Read1, Read2, Read3, Read4, Read5, Read6, Read7, Read8, Read9
);

/// The other reads' handler, never called.
async fn unused<C>(_: C, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    Err(ToolFailure::new(
        tool_contract::FailureKind::Failed,
        "not in the bench",
    ))
}

/// The tools' names, `get_order` first.
const TOOLS: [&str; 10] = [
    "get_order",
    "read1",
    "read2",
    "read3",
    "read4",
    "read5",
    "read6",
    "read7",
    "read8",
    "read9",
];

fn builder() -> DispatcherBuilder {
    let registry = tool_contract::registry![
        GetOrder, Read1, Read2, Read3, Read4, Read5, Read6, Read7, Read8, Read9
    ];
    Dispatcher::builder(
        registry,
        AuditKeys::new(SecretKey::new([3; 32]).expect("32 bytes")),
    )
    .handler(get_order)
    .handler(unused::<Read1>)
    .handler(unused::<Read2>)
    .handler(unused::<Read3>)
    .handler(unused::<Read4>)
    .handler(unused::<Read5>)
    .handler(unused::<Read6>)
    .handler(unused::<Read7>)
    .handler(unused::<Read8>)
    .handler(unused::<Read9>)
    .audit_sink(Arc::new(Discard))
}

/// `per_tool` policies on each of `tools`: one permit for the caller's tenant, the rest
/// forbids of order prefixes the call does not have, so that every one is evaluated and none
/// denies.
fn policies(tools: &[&str], per_tool: usize) -> Policies {
    let mut text = String::new();
    for tool in tools {
        text.push_str(&format!(
            "permit(principal, action == Tools::Action::\"{tool}\", resource)\n  \
             when {{ principal.tenant == \"acme\" }};\n"
        ));
        for index in 1..per_tool {
            text.push_str(&format!(
                "forbid(principal, action == Tools::Action::\"{tool}\", resource)\n  \
                 when {{ context.input.order_ref like \"BLOCKED-{index}-*\" }};\n"
            ));
        }
    }
    Policies::cedar("bench.cedar", text)
}

fn bench_policies(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let principal = Principal::new("acme", "alice");
    let task = Task::unlimited();
    let call = common::orders::call("get_order");
    let authorizer = |principal: &Principal, _: &ToolSpec, arguments: &serde_json::Value| {
        principal.tenant == "acme"
            && !(1..10).any(|index| {
                arguments["order_ref"]
                    .as_str()
                    .is_some_and(|order| order.starts_with(&format!("BLOCKED-{index}-")))
            })
    };
    let cases = [
        ("none", builder().build()),
        ("authorizer", builder().authorizer(authorizer).build()),
        (
            "cedar_1",
            builder().policies(policies(&TOOLS[..1], 1)).build(),
        ),
        (
            "cedar_10",
            builder().policies(policies(&TOOLS[..1], 10)).build(),
        ),
        (
            "cedar_100",
            builder().policies(policies(&TOOLS[..1], 100)).build(),
        ),
        (
            "cedar_100_over_10_tools",
            builder().policies(policies(&TOOLS, 10)).build(),
        ),
    ];

    let mut group = c.benchmark_group("policies");
    for (name, dispatcher) in cases {
        let dispatcher = dispatcher.expect("the policies validate");
        let dispatch = runtime.block_on(dispatcher.dispatch(&principal, &call, &task));
        assert_eq!(
            dispatch.result.model.status(),
            tool_contract::Status::Succeeded,
            "{name}"
        );
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    black_box(dispatcher.dispatch(&principal, &call, &task).await)
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_policies);
criterion_main!(benches);
