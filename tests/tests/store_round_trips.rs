//! Issue 33, point 2: on PostgreSQL, the common path of a write (the look, the claim, the
//! record of its outcome) costs one statement, in one round trip, per state change, and the
//! server parses none of them (they are prepared once per connection); counted on the wire
//! by a relay between the store and the server. And what lets those statements
//! go without the key's advisory lock: a general claim beaten to an empty key by one of them
//! reads the winner and answers from it.

use std::sync::Arc;

use tool_contract::Status;
use tool_contract::control::{
    Claim, Claimed, ControlStore, Lease, PostgresOptions, RowSeal, WriteState,
};
use tool_contract::dispatch::{Dispatch, Dispatcher};
use tool_contract::results::Delivery;
use tool_contract_tests::postgres::{Asked, Relay, Schema};
use tool_contract_tests::tracker::{Remote, builder, clock, code, create, message, run, sent};

/// What a test runs on: its schema, a relay to the server, and the remote its tools write to.
struct Bed {
    schema: Schema,
    relay: Relay,
    remote: Arc<Remote>,
}

impl Bed {
    /// A bed in a schema of the test's own; `None` when PostgreSQL is not configured.
    fn new(test: &str) -> Option<Bed> {
        let schema = Schema::new(test)?;
        let relay = Relay::start(&schema.url);
        Some(Bed {
            schema,
            relay,
            remote: Remote::new(),
        })
    }

    /// A dispatcher over a store reached through the relay, with what connecting and
    /// migrating asked already taken out of the relay's count.
    async fn dispatcher(&self) -> Dispatcher {
        self.dispatcher_with(self.schema.options()).await
    }

    /// As [`dispatcher`](Self::dispatcher), the store connected with `options`.
    async fn dispatcher_with(&self, options: PostgresOptions) -> Dispatcher {
        let store = self.relay.store(&self.schema, options).await;
        let dispatcher = builder(&self.remote)
            .store(Arc::new(store))
            .build()
            .expect("every tool has its handler");
        self.relay.take_traffic();
        dispatcher
    }
}

#[tokio::test]
async fn a_write_nobody_approves_is_two_prepared_statements_in_two_round_trips() {
    let Some(bed) = Bed::new("write_round_trips") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;

    let written = run(&dispatcher, &create("c1", "Broken build", "b", "k1")).await;
    assert_eq!(written.result.model.status(), Status::Succeeded);
    assert!(bed.remote.committed(&sent("k1")));
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 0
        },
        "the claim with its look, and the outcome"
    );
}

#[tokio::test]
async fn a_new_connection_prepares_the_common_statements_in_one_round_trip() {
    let Some(bed) = Bed::new("new_connection_round_trips") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;
    // The connection that migrated, and prepared, is gone: the write opens another.
    bed.relay.cut();
    // The pool's client sees its connection closed once its task runs.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    bed.relay.restore();
    bed.relay.take_traffic();

    let written = run(&dispatcher, &create("c1", "Broken build", "b", "k1")).await;
    assert_eq!(written.result.model.status(), Status::Succeeded);
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 8,
            round_trips: 3,
            parses: 6
        },
        "the six statements prepared together, then the write's two"
    );
}

#[tokio::test]
async fn a_tasks_poll_is_one_prepared_statement_in_one_round_trip() {
    let Some(bed) = Bed::new("task_poll_round_trips") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;
    let task = dispatcher
        .create_task(
            "acme/ana",
            "create_issue",
            None,
            None,
            std::time::Duration::from_secs(1),
        )
        .await
        .unwrap();
    bed.relay.take_traffic();

    let polled = dispatcher
        .task(&task.task_id, Some("acme/ana"))
        .await
        .unwrap();
    assert_eq!(polled, Some(task));
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 1,
            round_trips: 1,
            parses: 0
        },
        "the task's row, by its key"
    );
}

#[tokio::test]
async fn a_store_that_prepares_nothing_has_each_common_statement_parsed() {
    let Some(bed) = Bed::new("unprepared_round_trips") else {
        return;
    };
    let options = bed.schema.options().with_prepare_statements(false);
    let dispatcher = bed.dispatcher_with(options).await;

    let written = run(&dispatcher, &create("c1", "Broken build", "b", "k1")).await;
    assert_eq!(written.result.model.status(), Status::Succeeded);
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 2
        },
        "the same two statements, each sent unnamed"
    );

    let call = message("m1", "ops@example.com");
    let asked = run(&dispatcher, &call).await;
    approve(&dispatcher, &asked).await;
    bed.relay.take_traffic();
    let sent_once = run(&dispatcher, &call).await;
    assert_eq!(sent_once.result.model.status(), Status::Succeeded);
    assert!(bed.remote.committed(&sent("m1")));
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 2
        },
        "the approved write's two statements, each sent unnamed"
    );

    let replayed = run(&dispatcher, &create("c2", "Broken build", "b", "k1")).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 2
        },
        "the replay's two statements, each sent unnamed"
    );
}

#[tokio::test]
async fn an_approved_write_is_two_prepared_statements_its_grant_redeemed_in_the_claim() {
    let Some(bed) = Bed::new("approved_round_trips") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;
    let call = message("m1", "ops@example.com");
    let asked = run(&dispatcher, &call).await;
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 8,
            round_trips: 8,
            parses: 7
        },
        "the look, then the approval stage's transaction (begin, the key's lock, the approval \
         row, the record, the principal's pending approvals counted, the pending approval, \
         commit), which is off the common path and prepares nothing"
    );
    approve(&dispatcher, &asked).await;
    bed.relay.take_traffic();

    let sent_once = run(&dispatcher, &call).await;
    assert_eq!(sent_once.result.model.status(), Status::Succeeded);
    assert!(bed.remote.committed(&sent("m1")));
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 0
        },
        "the claim that redeems the grant this store wrote (no look: the claim checks the \
         grant's row), and the outcome"
    );
}

#[tokio::test]
async fn an_approval_with_edits_redeemed_through_its_store_runs_the_edits_in_two_statements() {
    let Some(bed) = Bed::new("edited_round_trips") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;
    let call = message("m1", "bob@globex.example");
    let pending = run(&dispatcher, &call)
        .await
        .pending_approval
        .expect("the write waits for approval");
    let edited = serde_json::json!({ "to": "bob@globex.example", "text": "hello, and welcome" });
    dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            &edited,
            "supervisor",
            clock() + std::time::Duration::from_secs(3600),
        )
        .await
        .expect("approved as edited");
    bed.relay.take_traffic();

    let dispatch = run(&dispatcher, &call).await;
    assert_eq!(
        bed.remote.arrivals(),
        ["bob@globex.example|hello, and welcome"]
    );
    let model = serde_json::to_value(&dispatch.result.model).expect("a model result");
    assert_eq!(model["error"]["code"], "APPROVED_WITH_CHANGES", "{model}");
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 0
        },
        "the claim that redeems the edited grant, and the outcome"
    );
}

#[tokio::test]
async fn a_write_approved_on_another_replica_looks_first_three_prepared_statements() {
    let Some(bed) = Bed::new("approved_elsewhere_round_trips") else {
        return;
    };
    let here = bed.dispatcher().await;
    let elsewhere = bed.dispatcher().await;
    let call = message("m1", "ops@example.com");
    let asked = run(&here, &call).await;
    approve(&elsewhere, &asked).await;
    bed.relay.take_traffic();

    let sent_once = run(&here, &call).await;
    assert_eq!(sent_once.result.model.status(), Status::Succeeded);
    assert!(bed.remote.committed(&sent("m1")));
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 3,
            round_trips: 3,
            parses: 0
        },
        "the look with the approval stage's read, the claim that redeems the grant, and the \
         outcome"
    );
}

#[tokio::test]
async fn a_grant_redeemed_on_another_replica_is_not_redeemed_again_from_the_hint() {
    let Some(bed) = Bed::new("stale_hint") else {
        return;
    };
    let here = bed.dispatcher().await;
    let elsewhere = bed.dispatcher().await;
    let call = message("m1", "ops@example.com");
    let asked = run(&here, &call).await;
    // Approved here, so here holds the grant as a hint; redeemed elsewhere.
    approve(&here, &asked).await;
    let sent_elsewhere = run(&elsewhere, &call).await;
    assert_eq!(sent_elsewhere.result.model.status(), Status::Succeeded);

    let answered_here = run(&here, &call).await;
    assert_eq!(bed.remote.creations(&sent("m1")), 1, "the write ran once");
    assert_eq!(
        answered_here.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    let replayed_elsewhere = run(&elsewhere, &call).await;
    assert_eq!(
        answered_here.result.model, replayed_elsewhere.result.model,
        "the answer of a stale hint is the answer of a look"
    );
}

#[tokio::test]
async fn a_grant_row_edited_after_its_store_approved_it_is_refused_and_nothing_runs() {
    let Some(bed) = Bed::new("edited_hinted_grant") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;
    let call = message("m1", "ops@example.com");
    let asked = run(&dispatcher, &call).await;
    approve(&dispatcher, &asked).await;
    // Another approver's name in the stored grant, its seal left as it was: the store's hint
    // still holds the grant as it wrote it, so the claim finds another row than the hint.
    bed.schema.execute(&format!(
        "UPDATE {}.tool_contract_approvals SET body = replace(body, 'supervisor', 'mallory')",
        bed.schema.name
    ));

    let refused = run(&dispatcher, &call).await;
    assert_eq!(
        code(&refused),
        Some(tool_contract::ErrorCode::Blocked),
        "the general claim opens the edited row and refuses it as unsealed"
    );
    assert_eq!(bed.remote.all_requests(), 0, "nothing was sent");
    let looked_elsewhere = run(&bed.dispatcher().await, &call).await;
    assert_eq!(
        code(&looked_elsewhere),
        code(&refused),
        "a replica without the hint, whose look opens the row, answers the same"
    );
}

/// Approves the pending approval `asked` waits for, through `dispatcher`.
async fn approve(dispatcher: &Dispatcher, asked: &Dispatch) {
    let pending = asked
        .pending_approval
        .as_ref()
        .expect("the write waits for approval");
    dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            "supervisor",
            clock() + std::time::Duration::from_secs(3600),
        )
        .await
        .expect("the pending approval is approved");
}

#[tokio::test]
async fn a_replayed_write_is_two_prepared_statements() {
    let Some(bed) = Bed::new("replay_round_trips") else {
        return;
    };
    let dispatcher = bed.dispatcher().await;
    run(&dispatcher, &create("c1", "Broken build", "b", "k1")).await;
    bed.relay.take_traffic();

    let replayed = run(&dispatcher, &create("c2", "Broken build", "b", "k1")).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    assert_eq!(replayed.write_state, Some(WriteState::Succeeded));
    assert_eq!(bed.remote.creations(&sent("k1")), 1);
    assert_eq!(
        bed.relay.take_traffic(),
        Asked {
            statements: 2,
            round_trips: 2,
            parses: 0
        },
        "the claim finds the key taken, and the look reads the record"
    );
}

#[tokio::test]
async fn a_general_claim_beaten_to_an_empty_key_reads_the_winner_and_answers() {
    let Some(schema) = Schema::new("beaten_claim") else {
        return;
    };
    let store = schema.store().await;
    let (winner, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls)
        .await
        .expect("the test database is reachable");
    tokio::spawn(connection);
    // An insert like `claim_if_absent`'s, left in progress.
    winner.batch_execute("BEGIN").await.unwrap();
    winner
        .execute(
            &format!(
                "INSERT INTO {}.tool_contract_ledger (key, request_sha256, tool, state, owner, \
                 lease_generation, lease_until_ms, expires_at_ms) \
                 VALUES ('k', 'r1', 'create_issue', 'executing', 'winner', 1, $1, $1)",
                schema.name
            ),
            &[&(T0 as i64 + 60_000)],
        )
        .await
        .unwrap();
    // The general claim reads the key empty (the insert is not committed), and its own
    // insert waits for the one in progress.
    let general = tokio::spawn(async move { store.claim(&claim("k", "loser")).await });
    wait_for_a_lock_wait(&winner).await;
    winner.batch_execute("COMMIT").await.unwrap();
    match general.await.unwrap() {
        Ok(Claimed::InFlight(record)) => assert_eq!(record.lease.owner, "winner"),
        other => panic!("expected the winner's record in flight, got {other:?}"),
    }
}

const T0: u64 = 1_787_392_800_000;

fn claim(key: &str, owner: &str) -> Claim {
    Claim {
        key: key.to_owned(),
        request_sha256: "r1".to_owned(),
        tool: "create_issue".to_owned(),
        lease: Lease {
            owner: owner.to_owned(),
            generation: 1,
        },
        now_ms: T0,
        lease_ms: 60_000,
        retention_ms: 3_600_000,
        kept: false,
        redeem: None,
        seal: RowSeal::new(&tool_contract_tests::tracker::keys()),
        call: None,
    }
}

/// Until another session of the database waits on a lock.
async fn wait_for_a_lock_wait(client: &tokio_postgres::Client) {
    for _ in 0..500 {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the general claim never waited on the insert in progress");
}

/// The store's statements read or write a few rows by key, where PostgreSQL's JIT (turned on
/// by estimated cost) spent 120 ms compiling the console's page query to run it in one: every
/// connection the store opens starts with `jit` off, and options the URL gives still reach
/// the server, after it (so they may turn it on again).
#[tokio::test]
async fn the_stores_connections_start_with_jit_off_and_keep_the_urls_options() {
    let Some(bed) = Bed::new("jit_off") else {
        return;
    };
    let plain = bed.relay.store(&bed.schema, bed.schema.options()).await;
    let url = format!(
        "{}?options=-c%20statement_timeout%3D5000",
        bed.relay.url(&bed.schema.url)
    );
    let with_options =
        tool_contract::control::PostgresStore::connect_with(&url, bed.schema.options())
            .await
            .expect("the store connects");
    let started = bed.relay.startup_options();
    assert!(started.len() >= 2, "{started:?}");
    assert!(
        started
            .iter()
            .all(|options| options.starts_with("-c jit=off")),
        "{started:?}"
    );
    assert!(
        started
            .iter()
            .any(|options| options == "-c jit=off -c statement_timeout=5000"),
        "{started:?}"
    );
    drop((plain, with_options));
}
