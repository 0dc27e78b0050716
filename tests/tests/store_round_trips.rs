//! Issue 33, point 2: on PostgreSQL, the common path of a write (the look, the claim, the
//! record of its outcome) costs one statement, in one round trip, per state change; counted
//! on the wire by a relay between the store and the server.

use std::sync::Arc;

use tool_contract::Status;
use tool_contract::control::{PostgresStore, WriteState};
use tool_contract::results::Delivery;
use tool_contract_tests::postgres::{Asked, Relay, Schema};
use tool_contract_tests::tracker::{Remote, builder, create, run, sent};

/// A dispatcher over a PostgreSQL store reached through `relay`, with what connecting and
/// migrating asked already taken out of the relay's count.
async fn through(
    schema: &Schema,
    relay: &Relay,
    remote: &Arc<Remote>,
) -> tool_contract::dispatch::Dispatcher {
    let store = PostgresStore::connect_with(&relay.url(&schema.url), schema.options())
        .await
        .expect("the test database is reachable through the relay");
    let dispatcher = builder(remote)
        .store(Arc::new(store))
        .build()
        .expect("every tool has its handler");
    relay.take_traffic();
    dispatcher
}

#[tokio::test]
async fn a_write_nobody_approves_is_two_statements_in_two_round_trips() {
    let Some(schema) = Schema::new("write_round_trips") else {
        return;
    };
    let relay = Relay::start(&schema.url);
    let remote = Remote::new();
    let dispatcher = through(&schema, &relay, &remote).await;

    let written = run(&dispatcher, &create("c1", "Broken build", "b", "k1")).await;
    assert_eq!(written.result.model.status(), Status::Succeeded);
    assert!(remote.committed(&sent("k1")));
    assert_eq!(
        relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2
        },
        "the claim with its look, and the outcome"
    );
}

#[tokio::test]
async fn a_replayed_write_is_one_statement() {
    let Some(schema) = Schema::new("replay_round_trips") else {
        return;
    };
    let relay = Relay::start(&schema.url);
    let remote = Remote::new();
    let dispatcher = through(&schema, &relay, &remote).await;
    run(&dispatcher, &create("c1", "Broken build", "b", "k1")).await;
    relay.take_traffic();

    let replayed = run(&dispatcher, &create("c2", "Broken build", "b", "k1")).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    assert_eq!(replayed.write_state, Some(WriteState::Succeeded));
    assert_eq!(remote.creations(&sent("k1")), 1);
    assert_eq!(
        relay.take_traffic(),
        Asked {
            statements: 1,
            round_trips: 1
        },
        "the look finds the record"
    );
}
