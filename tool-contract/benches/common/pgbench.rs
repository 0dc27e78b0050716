//! pgbench beside a bench: the floors of a write's statements, the store's own statements as
//! it sends them, and a runner that gives writes per second and the p99 of one write. Used by
//! the store bench and, through a `#[path]`, by the examples' load bench.
#![allow(dead_code)]

/// Two single-statement transactions per write: the insert of a fresh record, and the update
/// of its outcome fenced by state and lease. `{ledger}` is filled in.
pub const FLOOR: &str = "\\set n random(1, 9000000000000000)
INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result, call) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL, NULL) ON CONFLICT (key) DO NOTHING;
UPDATE {ledger} SET state = 'succeeded', result = repeat('s', 64), expires_at_ms = 1787396400001 WHERE key = 'pgbench:' || :n AND state = 'executing' AND owner = 'pgbench' AND lease_generation = :n;
";

/// The store's own two statements (`claim_if_absent`, then `advance`), as schema 8 sends
/// them: the claim with the call's arguments (kept while it runs), the outcome letting them
/// go. `{ledger}` is filled in.
pub const SAME_STATEMENTS: &str = "\\set n random(1, 9000000000000000)
INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result, call, kept) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL, repeat('c', 300), false) ON CONFLICT (key) DO NOTHING RETURNING 1;
UPDATE {ledger} AS l SET state = 'succeeded', result = COALESCE(repeat('s', 430), l.result), expires_at_ms = 1787396400001, call = CASE WHEN TRUE THEN NULL ELSE l.call END WHERE l.key = 'pgbench:' || :n AND l.state = 'executing' AND (NOT TRUE OR (l.owner = 'pgbench' AND l.lease_generation = :n)) RETURNING l.key, l.request_sha256, l.tool, l.state, l.owner, l.lease_generation, l.lease_until_ms, l.expires_at_ms, l.result, l.call, l.kept;
";

/// Three single-statement transactions per approved write: the read of the record and the
/// approval row together, an insert that updates the write's approval row in the same
/// statement, and the fenced update of the outcome. `{ledger}` and `{approvals}` are filled
/// in; the approval rows are made beforehand ([`GRANTED_ROWS`]), and a key drawn twice
/// finds its record there and writes nothing.
pub const APPROVED_FLOOR: &str = "\\set n random(1, 200000)
SELECT a.state, a.body, a.seal, l.state FROM (SELECT 'pgbench:' || :n AS key) AS asked LEFT JOIN {approvals} AS a ON a.key = asked.key LEFT JOIN {ledger} AS l ON l.key = asked.key;
WITH claimed AS (INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result, call) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL, NULL) ON CONFLICT (key) DO NOTHING RETURNING key) UPDATE {approvals} SET redeemed_owner = 'pgbench', redeemed_generation = :n, seal = repeat('s', 64) WHERE key IN (SELECT key FROM claimed);
UPDATE {ledger} SET state = 'succeeded', result = repeat('s', 64), expires_at_ms = 1787396400001 WHERE key = 'pgbench:' || :n AND state = 'executing' AND owner = 'pgbench' AND lease_generation = :n;
";

/// Two single-statement transactions per write approved through the store that redeems it:
/// [`APPROVED_FLOOR`] without the read.
pub const APPROVED_HERE_FLOOR: &str = "\\set n random(1, 200000)
WITH claimed AS (INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result, call) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL, NULL) ON CONFLICT (key) DO NOTHING RETURNING key) UPDATE {approvals} SET redeemed_owner = 'pgbench', redeemed_generation = :n, seal = repeat('s', 64) WHERE key IN (SELECT key FROM claimed);
UPDATE {ledger} SET state = 'succeeded', result = repeat('s', 64), expires_at_ms = 1787396400001 WHERE key = 'pgbench:' || :n AND state = 'executing' AND owner = 'pgbench' AND lease_generation = :n;
";

/// The approval rows the approved floors redeem, one granted row per key they may draw, all
/// unredeemed and with no record: made, or made again.
pub fn granted_rows(schema: &str) -> String {
    let ledger = format!("{schema}.tool_contract_ledger");
    let approvals = format!("{schema}.tool_contract_approvals");
    format!(
        "DELETE FROM {ledger} WHERE key LIKE 'pgbench:%'; \
         DELETE FROM {approvals} WHERE key LIKE 'pgbench:%'; \
         INSERT INTO {approvals} (key, approval_id, state, expires_at_ms, body, seal) \
         SELECT 'pgbench:' || n, 'apr_pgbench_' || n, 'granted', 1787396400000, \
         repeat('b', 600), repeat('s', 64) FROM generate_series(1, 200000) AS n"
    )
}

/// pgbench running `script` (with `schema`'s ledger filled in) in the query
/// `mode` it names (`prepared` or `extended`): its writes per second and the p99 of one
/// write in milliseconds (from its per-transaction log), or `None` if it could not run.
pub fn pgbench(
    url: &str,
    schema: &str,
    script: &str,
    mode: &str,
    clients: usize,
    seconds: u64,
) -> Option<(f64, f64)> {
    let script = script
        .replace("{ledger}", &format!("{schema}.tool_contract_ledger"))
        .replace("{approvals}", &format!("{schema}.tool_contract_approvals"))
        .replace(
            "{lock}",
            &format!("'{schema}' || chr(10) || 'pgbench:' || :n"),
        );
    let directory = std::env::temp_dir().join(format!(
        "tool-contract-pgbench-{}-{clients}",
        std::process::id()
    ));
    std::fs::create_dir_all(&directory).ok()?;
    let path = directory.join("write.sql");
    std::fs::write(&path, script).ok()?;
    let threads = clients.min(2).to_string();
    let output = std::process::Command::new("pgbench")
        .current_dir(&directory)
        .args([
            "-n",
            "-M",
            mode,
            "-l",
            "-c",
            &clients.to_string(),
            "-j",
            &threads,
            "-T",
        ])
        .arg(seconds.to_string())
        .arg("-f")
        .arg(&path)
        .arg(url)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let tps = text
        .lines()
        .find(|line| line.starts_with("tps = "))?
        .trim_start_matches("tps = ")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // Each log line: client, transaction number, latency in microseconds, …
    let mut latencies: Vec<u64> = Vec::new();
    for entry in std::fs::read_dir(&directory).ok()?.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("pgbench_log")
        {
            let log = std::fs::read_to_string(entry.path()).ok()?;
            latencies.extend(
                log.lines()
                    .filter_map(|line| line.split_whitespace().nth(2)?.parse::<u64>().ok()),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&directory);
    latencies.sort_unstable();
    let p99 = *latencies.get((latencies.len() * 99 / 100).min(latencies.len().checked_sub(1)?))?;
    Some((tps, p99 as f64 / 1e3))
}
