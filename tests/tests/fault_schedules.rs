//! Random fault schedules (timeouts, rate limits, refused connections, cancels, crashes,
//! restarts, budget stops, several faults in one call so that retries meet them) against one
//! logical write, on tokio's paused clock: a non-idempotent write with a status query, one
//! that needs approval, and an idempotent write that is retried.
//!
//! Whatever happens:
//! - a non-idempotent write takes effect at most once per key;
//! - no call after which the write took effect says that nothing happened;
//! - every operation ends terminal or unknown, and never failed once it took effect;
//! - once unknown, nothing is sent under its key again (only status queries);
//! - nothing runs that was not approved as it is: a change voids the approval.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tool_contract::CallContext;
use tool_contract::control::{MemoryStore, PendingApproval, WriteState};
use tool_contract::dispatch::{Budget, Dispatch, Dispatcher, Task};
use tool_contract::results::Outcome;
use tool_contract_tests::tracker::{
    Fault, Remote, advance_clock, alice, clock, context, dispatcher, sent,
};

const KEY: &str = "k-op";

#[derive(Debug, Clone)]
enum Step {
    /// The model calls the write (with one of two argument variants), the remote answering
    /// each attempt with the next fault, within a budget of so many attempts.
    Dispatch {
        faults: Vec<Fault>,
        variant: bool,
        budget: Option<u32>,
    },
    /// The process dies `after_ms` into the call; a new one starts over the same ledger.
    Crash {
        faults: Vec<Fault>,
        variant: bool,
        after_ms: u64,
    },
    /// Someone cancels `at_ms` into the call.
    CancelDuring {
        faults: Vec<Fault>,
        variant: bool,
        at_ms: u64,
    },
    /// The process restarts between calls.
    Restart,
    /// Wall-clock time passes (leases and approvals may lapse).
    Wait { seconds: u64 },
    /// The application asks what became of the write.
    Reconcile { variant: bool },
    /// A person approves what is pending.
    Approve,
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        3 => Just(Fault::None),
        2 => Just(Fault::CommitThenHang),
        1 => Just(Fault::HangBeforeCommit),
        1 => Just(Fault::NotSent),
        1 => (1_u64..3_000).prop_map(Fault::RateLimit),
        1 => Just(Fault::HonourCancel),
    ]
}

fn faults() -> impl Strategy<Value = Vec<Fault>> {
    proptest::collection::vec(fault(), 1..4)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (faults(), any::<bool>(), proptest::option::of(0_u32..3))
            .prop_map(|(faults, variant, budget)| Step::Dispatch { faults, variant, budget }),
        2 => (faults(), any::<bool>(), 1_u64..8_000).prop_map(|(faults, variant, after_ms)| Step::Crash { faults, variant, after_ms }),
        2 => (faults(), any::<bool>(), 1_u64..8_000).prop_map(|(faults, variant, at_ms)| Step::CancelDuring { faults, variant, at_ms }),
        1 => Just(Step::Restart),
        1 => prop_oneof![Just(30_u64), Just(600), Just(7_200)].prop_map(|seconds| Step::Wait { seconds }),
        1 => any::<bool>().prop_map(|variant| Step::Reconcile { variant }),
        3 => Just(Step::Approve),
    ]
}

/// The write under test: with a status query and no approval, with approval and manual
/// reconciliation, or idempotent (retried under its key).
#[derive(Debug, Clone, Copy)]
enum Tool {
    Create,
    File,
    Label,
}

impl Tool {
    fn call(self, variant: bool, call_id: usize) -> CallContext {
        let body = if variant { "body B" } else { "body A" };
        let (name, arguments) = match self {
            Tool::Create => ("create_issue", json!({ "title": "T", "body": body })),
            Tool::File => ("file_issue", json!({ "title": "T", "body": body })),
            Tool::Label => ("label_issue", json!({ "number": 7, "label": body })),
        };
        context(&format!("c{call_id}"), name, arguments, "op", KEY)
    }
}

struct World {
    tool: Tool,
    remote: Arc<Remote>,
    ledger: MemoryStore,
    dispatcher: Dispatcher,
    task: Task,
    calls: usize,
    pending: Option<PendingApproval>,
    /// What was approved, once per approval.
    approved: Vec<String>,
    /// Requests under the key when it was first seen unknown.
    requests_when_unknown: Option<u32>,
}

impl World {
    fn new(tool: Tool) -> Self {
        let remote = Remote::new();
        let ledger = MemoryStore::new();
        let dispatcher = dispatcher(&remote, Arc::new(ledger.clone()));
        World {
            tool,
            remote,
            ledger,
            dispatcher,
            task: Task::unlimited(),
            calls: 0,
            pending: None,
            approved: Vec::new(),
            requests_when_unknown: None,
        }
    }

    fn restart(&mut self) {
        self.dispatcher = dispatcher(&self.remote, Arc::new(self.ledger.clone()));
    }

    fn next_call(&mut self, variant: bool) -> CallContext {
        self.calls += 1;
        self.tool.call(variant, self.calls)
    }

    /// Keeps what the call left pending, and checks what it said: a call after which the
    /// write took effect, when it had not before, never says that nothing happened.
    fn note(&mut self, dispatch: Dispatch, committed_before: bool) -> Result<(), TestCaseError> {
        let committed = self.remote.committed(&sent(KEY));
        if let Some(error) = dispatch.result.model.error()
            && committed
            && !committed_before
        {
            prop_assert_ne!(
                error.code().entry().outcome,
                Outcome::NotStarted,
                "the write took effect, and the call said {:?}",
                error.code()
            );
        }
        if let Some(pending) = dispatch.pending_approval {
            self.pending = Some(pending);
        }
        Ok(())
    }

    async fn run(&mut self, step: Step) -> Result<(), TestCaseError> {
        let committed_before = self.remote.committed(&sent(KEY));
        match step {
            Step::Dispatch {
                faults,
                variant,
                budget,
            } => {
                self.remote.script(&faults);
                let call = self.next_call(variant);
                let task = match budget {
                    Some(attempts) => Task::new(Budget::default().with_tool_calls(attempts)),
                    None => Task::unlimited(),
                };
                let dispatch = self.dispatcher.dispatch(&alice(), &call, &task).await;
                self.note(dispatch, committed_before)?;
            }
            Step::Crash {
                faults,
                variant,
                after_ms,
            } => {
                self.remote.script(&faults);
                let call = self.next_call(variant);
                let finished = tokio::time::timeout(
                    Duration::from_millis(after_ms),
                    self.dispatcher.dispatch(&alice(), &call, &self.task),
                )
                .await;
                if let Ok(dispatch) = finished {
                    self.note(dispatch, committed_before)?;
                }
                self.restart();
            }
            Step::CancelDuring {
                faults,
                variant,
                at_ms,
            } => {
                self.remote.script(&faults);
                let call = self.next_call(variant);
                let principal = alice();
                let (dispatch, _) = tokio::join!(
                    self.dispatcher.dispatch(&principal, &call, &self.task),
                    async {
                        tokio::time::sleep(Duration::from_millis(at_ms)).await;
                        self.dispatcher.cancel(&alice(), &call).await
                    }
                );
                self.note(dispatch, committed_before)?;
            }
            Step::Restart => self.restart(),
            Step::Wait { seconds } => advance_clock(Duration::from_secs(seconds)),
            Step::Reconcile { variant } => {
                let call = self.next_call(variant);
                self.dispatcher.reconcile(&alice(), &call, &self.task).await;
            }
            Step::Approve => {
                if let Some(pending) = self.pending.take() {
                    let approved = self
                        .dispatcher
                        .approve(
                            &pending.approval_id,
                            &pending.preview_sha256,
                            "reviewer",
                            clock() + Duration::from_secs(900),
                        )
                        .await;
                    if approved.is_ok() {
                        let arguments = &pending.preview.arguments;
                        self.approved.push(format!(
                            "{}|{}",
                            arguments["title"].as_str().unwrap_or(""),
                            arguments["body"].as_str().unwrap_or("")
                        ));
                    }
                }
            }
        }
        // Unscripted faults must not linger into the next step.
        self.remote.script(&[]);
        Ok(())
    }

    async fn state(&self) -> Option<WriteState> {
        self.dispatcher
            .write_state(&alice(), &self.tool.call(false, 0))
            .await
            .unwrap()
    }

    async fn check(&mut self) -> Result<(), TestCaseError> {
        let key = sent(KEY);
        let requests = self.remote.requests(&key);
        prop_assert!(
            self.remote.creations(&key) <= 1,
            "the write took effect {} times",
            self.remote.creations(&key)
        );
        if self.remote.committed(&key) {
            prop_assert_ne!(
                self.state().await,
                Some(WriteState::Failed),
                "it took effect"
            );
        }
        if let Some(when_unknown) = self.requests_when_unknown {
            prop_assert_eq!(
                requests,
                when_unknown,
                "something was sent after the outcome became unknown"
            );
        } else if self.state().await == Some(WriteState::Unknown) {
            self.requests_when_unknown = Some(requests);
        }
        if let Tool::File = self.tool {
            // Each arrival ran on an approval of exactly what arrived, used once.
            let arrivals = self.remote.arrivals();
            for arrival in &arrivals {
                let approvals = self
                    .approved
                    .iter()
                    .filter(|approved| *approved == arrival)
                    .count();
                let uses = arrivals.iter().filter(|other| *other == arrival).count();
                prop_assert!(
                    uses <= approvals,
                    "{arrival:?} ran {uses} times on {approvals} approvals"
                );
            }
        }
        Ok(())
    }
}

fn run_schedule(tool: Tool, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let mut world = World::new(tool);
        for step in steps {
            world.run(step).await?;
            world.check().await?;
        }
        // Settle: leases lapse, anything pending is approved, and the model asks once more. A
        // grant of the variant's arguments stands until it expires (15 minutes), so each round
        // ends past it.
        advance_clock(Duration::from_secs(7_200));
        for _ in 0..3 {
            world.run(Step::Approve).await?;
            world
                .run(Step::Dispatch {
                    faults: vec![Fault::None],
                    variant: false,
                    budget: None,
                })
                .await?;
            world.check().await?;
            advance_clock(Duration::from_secs(1_000));
        }
        let end = world.state().await;
        prop_assert!(
            end.is_some_and(|state| state.is_terminal() || state == WriteState::Unknown),
            "the operation ended {end:?}"
        );
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn no_fault_schedule_runs_a_write_twice_says_it_did_not_happen_or_leaves_it_unsettled(
        tool in prop_oneof![Just(Tool::Create), Just(Tool::File), Just(Tool::Label)],
        steps in proptest::collection::vec(step(), 1..12),
    ) {
        run_schedule(tool, steps)?;
    }
}
