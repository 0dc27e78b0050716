//! Tasks in the control store, on memory, SQLite and PostgreSQL: created before anyone is told
//! their id, read only by their owner, moved only as their state allows, the same task on
//! every handle of the store (another replica, or the same file after a restart), gone after
//! their TTL.

use tool_contract::control::{
    ControlStore, RowSeal, StaleTasks, StoreError, TaskChange, TaskMove, TaskMoveError, TaskRow,
    TaskStatus, WorkerRenewal,
};
use tool_contract_tests::backends::{Backend, Memory, Postgres, sqlite_file};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tasks::working_task;

const ANA: &str = "acme/ana";

/// What the tests' task rows are sealed with.
fn seal() -> RowSeal {
    RowSeal::new(&tool_contract_tests::tracker::keys())
}
const REPLICA_A: &str = "replica-a";

fn working(ttl_ms: Option<u64>) -> TaskRow {
    working_task(ANA, REPLICA_A, 30_000, ttl_ms)
}

/// `change` asked by `owner` (a client), or, for `None`, by replica A's work.
fn step(task: &TaskRow, owner: Option<&str>, change: TaskChange, now_ms: u64) -> TaskMove {
    TaskMove {
        task_id: task.task_id.clone(),
        owner: owner.map(str::to_owned),
        worker: owner.is_none().then(|| REPLICA_A.to_owned()),
        change,
        now_ms,
        seal: seal(),
    }
}

/// One task's whole life, created through one handle of `backend` and read and moved
/// through another (a second replica, or the store opened again after a restart).
async fn a_task_lives_on_every_handle(backend: &impl Backend) {
    let (first, second) = (backend.open().await, backend.open().await);
    let task = working(Some(60_000));
    assert!(first.create_task(&task, &seal()).await.unwrap());
    assert!(
        !second.create_task(&task, &seal()).await.unwrap(),
        "one id is one task"
    );

    assert_eq!(
        second
            .task(&task.task_id, Some(ANA), 2_000, &seal())
            .await
            .unwrap(),
        Some(task.clone())
    );
    // Another principal's id reads as absent, and cannot move it.
    assert_eq!(
        second
            .task(&task.task_id, Some("acme/ben"), 2_000, &seal())
            .await
            .unwrap(),
        None
    );
    let cancel_as_ben = step(&task, Some("acme/ben"), TaskChange::Cancel, 2_000);
    assert_eq!(
        second.move_task(&cancel_as_ben).await.unwrap(),
        Err(TaskMoveError::NotFound)
    );

    let began = first
        .move_task(&step(&task, None, TaskChange::Begin, 2_000))
        .await
        .unwrap()
        .unwrap();
    assert!(began.began);
    // Asked to cancel once its work began: refused, and the task goes on.
    assert_eq!(
        second
            .move_task(&step(&task, Some(ANA), TaskChange::Cancel, 3_000))
            .await
            .unwrap(),
        Err(TaskMoveError::Began)
    );
    let result = r#"{"content":[],"isError":false}"#.to_owned();
    first
        .move_task(&step(
            &task,
            None,
            TaskChange::Complete {
                result: result.clone(),
            },
            4_000,
        ))
        .await
        .unwrap()
        .unwrap();
    let read = second
        .task(&task.task_id, Some(ANA), 5_000, &seal())
        .await
        .unwrap()
        .expect("the task");
    assert_eq!(
        (read.status, read.outcome.as_deref(), read.updated_at_ms),
        (TaskStatus::Completed, Some(result.as_str()), 4_000)
    );
    // Ended: it never changes again.
    assert_eq!(
        second
            .move_task(&step(
                &task,
                None,
                TaskChange::Fail { error: "{}".into() },
                6_000
            ))
            .await
            .unwrap(),
        Err(TaskMoveError::Ended(TaskStatus::Completed))
    );
}

/// A task read after its TTL is absent, and the purge removes it; one without a TTL stays.
async fn a_task_expires_after_its_ttl(backend: &impl Backend) {
    let store = backend.open().await;
    let (brief, kept) = (working(Some(10_000)), working(None));
    assert!(store.create_task(&brief, &seal()).await.unwrap());
    assert!(store.create_task(&kept, &seal()).await.unwrap());
    assert!(
        store
            .task(&brief.task_id, Some(ANA), 10_999, &seal())
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .task(&brief.task_id, Some(ANA), 11_000, &seal())
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store
            .move_task(&step(&brief, Some(ANA), TaskChange::Cancel, 11_000))
            .await
            .unwrap(),
        Err(TaskMoveError::NotFound)
    );
    let purged = store.purge_expired(11_000).await.unwrap();
    assert_eq!(purged.tasks, 1);
    assert!(
        store
            .task(&brief.task_id, None, 0, &seal())
            .await
            .unwrap()
            .is_none(),
        "purged"
    );
    assert!(
        store
            .task(&kept.task_id, Some(ANA), u64::MAX, &seal())
            .await
            .unwrap()
            .is_some()
    );
}

/// Cancelled before its work began: the work never begins.
async fn a_task_cancelled_before_its_work_never_begins(backend: &impl Backend) {
    let store = backend.open().await;
    let task = working(None);
    assert!(store.create_task(&task, &seal()).await.unwrap());
    let cancelled = store
        .move_task(&step(&task, Some(ANA), TaskChange::Cancel, 2_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(
        store
            .move_task(&step(&task, None, TaskChange::Begin, 3_000))
            .await
            .unwrap(),
        Err(TaskMoveError::Ended(TaskStatus::Cancelled))
    );
}

/// A task whose worker stopped renewing its hold is listed once the hold lapsed, taken over
/// by one replica, and its first worker changes nothing more.
async fn a_task_whose_hold_lapsed_is_taken_over_once(backend: &impl Backend) {
    let (first, second) = (backend.open().await, backend.open().await);
    let task = working(None);
    assert!(first.create_task(&task, &seal()).await.unwrap());
    let listed = |stale: StaleTasks| {
        stale
            .tasks
            .iter()
            .any(|listed| listed.task_id == task.task_id)
    };
    assert!(
        !listed(second.stale_tasks(29_999, &seal()).await.unwrap()),
        "held"
    );
    assert!(
        listed(second.stale_tasks(30_000, &seal()).await.unwrap()),
        "lapsed"
    );
    let taken = second
        .move_task(&hold(&task, "replica-b", 30_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.worker.as_deref(), Some("replica-b"));
    assert_eq!(
        first
            .move_task(&hold(&task, "replica-c", 30_000))
            .await
            .unwrap(),
        Err(TaskMoveError::Held),
        "taken over once"
    );
    assert!(!listed(first.stale_tasks(30_000, &seal()).await.unwrap()));
    assert_eq!(
        first
            .move_task(&step(&task, None, TaskChange::Begin, 30_001))
            .await
            .unwrap(),
        Err(TaskMoveError::Held),
        "replica A's work changes nothing more"
    );
}

/// Whether `task` is among the stale tasks `store` lists at `now_ms`.
async fn listed_stale(store: &dyn ControlStore, task: &TaskRow, now_ms: u64) -> bool {
    let stale = store.stale_tasks(now_ms, &seal()).await.unwrap();
    stale
        .tasks
        .iter()
        .any(|listed| listed.task_id == task.task_id)
}

/// `worker`'s lease renewed until `until_ms` at `now_ms`, looking at `task`.
fn renewal(
    worker: &str,
    task: &TaskRow,
    until_ms: u64,
    now_ms: u64,
    seal: RowSeal,
) -> WorkerRenewal {
    WorkerRenewal {
        worker: worker.to_owned(),
        until_ms,
        task_ids: vec![task.task_id.clone()],
        now_ms,
        seal,
    }
}

/// `worker` taking `task` over at `now_ms`.
fn hold(task: &TaskRow, worker: &str, now_ms: u64) -> TaskMove {
    TaskMove {
        task_id: task.task_id.clone(),
        owner: None,
        worker: Some(worker.to_owned()),
        change: TaskChange::Hold {
            worker: worker.to_owned(),
            until_ms: now_ms + 30_000,
        },
        now_ms,
        seal: seal(),
    }
}

/// A worker that renews its own lease keeps its tasks past the hold each was taken with,
/// without writing their rows; once its lease lapsed they are taken over, and its next
/// renewal says so.
async fn a_worker_renewing_its_lease_keeps_its_tasks(backend: &impl Backend) {
    const RENEWING: &str = "replica-renewing";
    let (first, second) = (backend.open().await, backend.open().await);
    let task = working_task(ANA, RENEWING, 30_000, None);
    assert!(first.create_task(&task, &seal()).await.unwrap());
    let standing = first
        .renew_worker(&renewal(RENEWING, &task, 90_000, 20_000, seal()))
        .await
        .unwrap();
    assert_eq!(standing, [Some(TaskStatus::Working)]);
    assert_eq!(
        second
            .task(&task.task_id, None, 20_000, &seal())
            .await
            .unwrap(),
        Some(task.clone()),
        "the task's row is not written"
    );
    assert!(
        !listed_stale(&*second, &task, 60_000).await,
        "its worker's lease runs"
    );
    assert_eq!(
        second
            .move_task(&hold(&task, "replica-b", 60_000))
            .await
            .unwrap(),
        Err(TaskMoveError::Held)
    );
    assert!(listed_stale(&*second, &task, 90_000).await, "both lapsed");
    let taken = second
        .move_task(&hold(&task, "replica-b", 90_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.worker.as_deref(), Some("replica-b"));
    let standing = first
        .renew_worker(&renewal(RENEWING, &task, 150_000, 90_001, seal()))
        .await
        .unwrap();
    assert_eq!(standing, [None], "the hold was lost");
}

/// A worker's lease sealed under other keys (another deployment's, or forged) holds nothing:
/// the sealed rows decide a takeover. (A SQL store's stale scan is narrowed by the columns, as
/// it is by a task's status, so a forged row can hide a task from the scan; it cannot keep it
/// from the replica that asks for it.)
async fn a_forged_worker_lease_holds_nothing(backend: &impl Backend) {
    const FORGED: &str = "replica-forged";
    let store = backend.open().await;
    let task = working_task(ANA, FORGED, 30_000, None);
    assert!(store.create_task(&task, &seal()).await.unwrap());
    let other_keys =
        tool_contract::AuditKeys::new(tool_contract::SecretKey::new([0x99; 32]).unwrap());
    store
        .renew_worker(&renewal(
            FORGED,
            &task,
            90_000,
            20_000,
            RowSeal::new(&other_keys),
        ))
        .await
        .unwrap();
    let taken = store.move_task(&hold(&task, "replica-b", 30_000)).await;
    assert_eq!(taken.unwrap().unwrap().worker.as_deref(), Some("replica-b"));
}

/// An owner's tasks read a page at a time, in the order of their ids, through another handle:
/// another owner's tasks and expired ones are never among them.
async fn an_owners_tasks_are_listed_in_pages(backend: &impl Backend) {
    const CLEO: &str = "acme/cleo";
    let (first, second) = (backend.open().await, backend.open().await);
    let mut listed = Vec::new();
    for _ in 0..3 {
        let task = TaskRow {
            owner: CLEO.to_owned(),
            ..working(Some(60_000))
        };
        assert!(first.create_task(&task, &seal()).await.unwrap());
        listed.push(task.task_id);
    }
    listed.sort();
    let expired = TaskRow {
        owner: CLEO.to_owned(),
        ..working(Some(500))
    };
    let anothers = working(Some(60_000));
    for task in [&expired, &anothers] {
        assert!(first.create_task(task, &seal()).await.unwrap());
    }

    let ids = |page: Vec<TaskRow>| {
        page.into_iter()
            .map(|task| task.task_id)
            .collect::<Vec<_>>()
    };
    let page = second
        .tasks_of(CLEO, None, 2, 2_000, &seal())
        .await
        .unwrap();
    assert_eq!(ids(page), listed[..2]);
    let page = second
        .tasks_of(CLEO, Some(&listed[1]), 2, 2_000, &seal())
        .await
        .unwrap();
    assert_eq!(ids(page), listed[2..]);
    let page = second
        .tasks_of(CLEO, Some(&listed[2]), 2, 2_000, &seal())
        .await
        .unwrap();
    assert!(page.is_empty(), "nothing after the last");
}

/// A stale row that does not open (sealed under other keys: another deployment's, or forged)
/// is listed as unreadable, and the other stale tasks are still listed for takeover.
async fn an_unreadable_stale_row_never_hides_the_others(backend: &impl Backend) {
    let store = backend.open().await;
    let other_keys =
        tool_contract::AuditKeys::new(tool_contract::SecretKey::new([0x99; 32]).unwrap());
    let unreadable = working_task("acme/dora", REPLICA_A, 30_000, None);
    assert!(
        store
            .create_task(&unreadable, &RowSeal::new(&other_keys))
            .await
            .unwrap()
    );
    let readable = working_task("acme/dora", REPLICA_A, 30_000, None);
    assert!(store.create_task(&readable, &seal()).await.unwrap());
    let stale = store.stale_tasks(30_000, &seal()).await.unwrap();
    assert!(
        stale
            .tasks
            .iter()
            .any(|task| task.task_id == readable.task_id)
    );
    assert!(
        stale
            .tasks
            .iter()
            .all(|task| task.task_id != unreadable.task_id)
    );
    let ids: Vec<&str> = stale.unreadable.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, [unreadable.task_id.as_str()]);
    assert!(matches!(stale.unreadable[0].1, StoreError::Unsealed(_)));
}

async fn every_behaviour(backend: &impl Backend) {
    an_unreadable_stale_row_never_hides_the_others(backend).await;
    a_task_whose_hold_lapsed_is_taken_over_once(backend).await;
    a_worker_renewing_its_lease_keeps_its_tasks(backend).await;
    a_forged_worker_lease_holds_nothing(backend).await;
    a_task_lives_on_every_handle(backend).await;
    a_task_expires_after_its_ttl(backend).await;
    a_task_cancelled_before_its_work_never_begins(backend).await;
    an_owners_tasks_are_listed_in_pages(backend).await;
}

#[tokio::test]
async fn tasks_in_memory() {
    every_behaviour(&Memory(tool_contract::control::MemoryStore::new())).await;
}

#[tokio::test]
async fn tasks_in_one_sqlite_file_across_a_restart() {
    every_behaviour(&sqlite_file()).await;
}

#[tokio::test]
async fn tasks_on_postgresql_across_two_replicas() {
    let Some(schema) = Schema::new("tasks_on_postgresql") else {
        return;
    };
    every_behaviour(&Postgres(schema)).await;
}

/// A task's row as its store wrote it, then rewritten outside the store: completed with a
/// result its worker never wrote. `tamper` runs `sql` (with `{id}` the task's id) against the
/// database.
async fn a_task_row_rewritten_outside_the_store_is_refused(
    backend: &impl Backend,
    tamper: impl FnOnce(&str),
) {
    let store = backend.open().await;
    let task = working(None);
    assert!(store.create_task(&task, &seal()).await.unwrap());
    tamper(&task.task_id);
    let read = store.task(&task.task_id, Some(ANA), 2_000, &seal()).await;
    assert!(
        matches!(read, Err(StoreError::Unsealed(_))),
        "a forged result is not read: {read:?}"
    );
    let moved = store
        .move_task(&step(&task, Some(ANA), TaskChange::Cancel, 2_000))
        .await;
    assert!(matches!(moved, Err(StoreError::Unsealed(_))), "{moved:?}");
}

/// The statement that completes a task behind its store's back.
const FORGE: &str = "UPDATE {table} SET status = 'completed', body = replace(body, \
                     '\"status\":\"working\"', '\"status\":\"completed\"') WHERE task_id = '{id}'";

#[tokio::test]
async fn a_task_row_rewritten_in_the_sqlite_file_is_refused() {
    let file = sqlite_file();
    let path = file.0.clone();
    a_task_row_rewritten_outside_the_store_is_refused(&file, |task_id| {
        let connection = rusqlite::Connection::open(&path).unwrap();
        let sql = FORGE
            .replace("{table}", "tool_contract_tasks")
            .replace("{id}", task_id);
        assert_eq!(connection.execute(&sql, []).unwrap(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_task_row_rewritten_in_postgresql_is_refused() {
    let Some(schema) = Schema::new("a_task_row_rewritten") else {
        return;
    };
    let table = format!("{}.tool_contract_tasks", schema.name);
    let backend = Postgres(schema);
    a_task_row_rewritten_outside_the_store_is_refused(&backend, |task_id| {
        backend
            .0
            .execute(&FORGE.replace("{table}", &table).replace("{id}", task_id));
    })
    .await;
}

/// A task its worker held before worker leases were kept (schema version 10), held by that
/// worker's lease once the store is migrated: its renewal finds the task, and no scan lists
/// it while the lease runs.
async fn a_task_from_before_worker_leases_is_held_by_its_workers_lease(
    backend: &impl Backend,
    roll_back_to_version_10: impl FnOnce(),
) {
    const UPGRADED: &str = "replica-upgraded";
    let task = working_task(ANA, UPGRADED, 30_000, None);
    let before = backend.open().await;
    assert!(before.create_task(&task, &seal()).await.unwrap());
    drop(before);
    roll_back_to_version_10();
    let store = backend.open().await;
    let standing = store
        .renew_worker(&renewal(UPGRADED, &task, 90_000, 20_000, seal()))
        .await
        .unwrap();
    assert_eq!(standing, [Some(TaskStatus::Working)]);
    assert!(!listed_stale(&*store, &task, 60_000).await);
}

#[tokio::test]
async fn a_task_from_before_worker_leases_is_held_once_a_sqlite_file_is_migrated() {
    let file = sqlite_file();
    let path = file.0.clone();
    a_task_from_before_worker_leases_is_held_by_its_workers_lease(&file, || {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "DROP TABLE tool_contract_workers;
                 ALTER TABLE tool_contract_tasks DROP COLUMN worker;
                 PRAGMA user_version = 10;",
            )
            .unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_task_from_before_worker_leases_is_held_once_postgresql_is_migrated() {
    let Some(schema) = Schema::new("worker_leases_migrated") else {
        return;
    };
    let name = schema.name.clone();
    let backend = Postgres(schema);
    a_task_from_before_worker_leases_is_held_by_its_workers_lease(&backend, || {
        backend.0.execute(&format!(
            "DROP TABLE {name}.tool_contract_workers;
             ALTER TABLE {name}.tool_contract_tasks DROP COLUMN worker;
             UPDATE {name}.tool_contract_schema SET version = 10;"
        ));
    })
    .await;
}

/// The purge of expired rows removes workers' leases that lapsed (each holds nothing) and
/// keeps those that run; `count_workers` counts the store's lease rows.
async fn a_lapsed_worker_lease_is_purged(backend: &impl Backend, count_workers: impl Fn() -> i64) {
    let store = backend.open().await;
    let task = working(None);
    for (worker, until_ms) in [("replica-gone", 40_000), ("replica-alive", 90_000)] {
        store
            .renew_worker(&renewal(worker, &task, until_ms, 20_000, seal()))
            .await
            .unwrap();
    }
    assert_eq!(count_workers(), 2);
    store.purge_expired(40_000).await.unwrap();
    assert_eq!(
        count_workers(),
        1,
        "the lapsed lease is gone, the running one kept"
    );
}

#[tokio::test]
async fn a_lapsed_worker_lease_is_purged_from_a_sqlite_file() {
    let file = sqlite_file();
    let path = file.0.clone();
    a_lapsed_worker_lease_is_purged(&file, || {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .query_row("SELECT count(*) FROM tool_contract_workers", [], |row| {
                row.get(0)
            })
            .unwrap()
    })
    .await;
}

#[tokio::test]
async fn a_lapsed_worker_lease_is_purged_from_postgresql() {
    let Some(schema) = Schema::new("worker_leases_purged") else {
        return;
    };
    let count = format!("SELECT count(*) FROM {}.tool_contract_workers", schema.name);
    let backend = Postgres(schema);
    a_lapsed_worker_lease_is_purged(&backend, || backend.0.query_i64(&count)).await;
}
