//! Issue 32, point 5: the refund desk's approvals console in a real browser. Headless
//! Chromium, one browser per person, each with a virtual authenticator: two supervisors
//! enrol by invitation and approve a refund above 40.00 with their passkeys, and it drafts
//! once (the same refund asked as an MCP task waits for those signatures, and a second replica
//! reads it completed once they are in); the receipt downloaded from the page verifies offline with the published files; a
//! supervisor of another shop sees nothing; a POST without its CSRF token is refused; a
//! change outside the contract is refused on the page. The screenshots in `docs/console/` are
//! taken here, so they show the pages as they are.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;
use tool_contract::results::{ApproverKeys, KeySet};
use tool_contract_tests::browser::{Browser, Driver, chromedriver};
use tool_contract_tests::console::Visit;
use tool_contract_tests::listening::listening;

use crate::desk_tasks::{request_at, task_until_at};
use crate::mcp_http::call_at;

/// Where the screenshots of the console are kept (`docs/console/`).
fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/console")
}

/// `refund-desk console ARGUMENTS --store STORE`'s standard output, trimmed.
async fn desk_command(arguments: &[&str], store: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_refund-desk"))
        .args(["console"])
        .args(arguments)
        .arg("--store")
        .arg(store)
        .output()
        .await
        .expect("refund-desk runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

/// A refund two supervisors must approve, each with their passkey (above 40.00).
fn large_refund() -> Value {
    json!({ "order_ref": "ORDER-1002", "amount_cents": 7900, "reason": "Kettle arrived dented" })
}

/// `person`'s browser, enrolled through their invitation and on the list of approvals.
async fn enrolled(
    driver: &mut Driver,
    base: &str,
    store: &Path,
    work: &Path,
    person: &str,
    shoot: Option<&str>,
) -> Browser {
    let downloads = work.join(person);
    std::fs::create_dir_all(&downloads).unwrap();
    let browser = driver.browser(&downloads).await;
    let invitation = desk_command(&["--invite", person], store).await;
    browser
        .open(&format!(
            "{base}{}",
            invitation.trim_start_matches("/console")
        ))
        .await;
    if let Some(name) = shoot {
        browser.screenshot(&screenshots().join(name)).await;
    }
    browser.click("#enrol button").await;
    browser.wait_for_path("/console/approvals").await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_supervisors_approve_a_large_refund_in_their_browsers_and_it_drafts_once() {
    let Some(chromedriver) = chromedriver("the console's browser test") else {
        return;
    };
    let work = std::env::temp_dir().join(format!("refund-desk-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(screenshots()).unwrap();
    let store = work.join("desk.sqlite");
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--console", "--store"])
        .arg(&store);
    let (_desk, address) = listening(command).await;
    let port = address.rsplit(':').next().unwrap();
    // The origin the supervisors' passkeys are made for.
    let base = format!("http://localhost:{port}/console");

    // The model asks; the refund waits for two signatures, and the client is sent to the page.
    let asked = call_at(&address, "create_refund_draft", large_refund(), json!({})).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    // A client that takes tasks asks the same refund as a task, which waits for the same
    // signatures; another replica of the desk, with its own console, answers for it.
    let mut replica = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    replica
        .args(["mcp", "--http", "127.0.0.1:0", "--console", "--store"])
        .arg(&store);
    let (_replica, replica_address) = listening(replica).await;
    let replica_url = format!("http://{replica_address}/");
    let as_task = json!({ "name": "create_refund_draft", "arguments": large_refund() });
    let url = format!("http://{address}/");
    let created = request_at(&url, "tools/call", "create_refund_draft", as_task).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let waits = |task: &Value| task["status"] == "input_required";
    let waiting = task_until_at(&replica_url, &task, Duration::from_secs(10), waits).await;
    assert!(
        waiting["statusMessage"].as_str().unwrap().contains('2'),
        "{waiting}"
    );

    let mut driver = Driver::start(&chromedriver).await;
    let ana = enrolled(
        &mut driver,
        &base,
        &store,
        &work,
        "sup-ana",
        Some("invitation.png"),
    )
    .await;
    let list = ana.text().await;
    assert!(list.contains("create_refund_draft"), "{list}");
    assert!(list.contains("0 of 2"), "{list}");
    ana.screenshot(&screenshots().join("approvals.png")).await;
    ana.click("#pending a").await;
    ana.wait_for_path("").await;
    let page = ana.text().await;
    assert!(page.contains("Kettle arrived dented"), "{page}");
    assert!(page.contains("2 different people must approve"), "{page}");
    ana.screenshot(&screenshots().join("approval.png")).await;

    // A POST from the page without its CSRF token changes nothing.
    let statement = format!(
        "{}/statement",
        ana.client.current_url().await.unwrap().path()
    );
    let status = ana
        .run(&format!(
            "const done = arguments[0];
             fetch({statement:?}, {{method: 'POST', headers: {{'content-type': 'application/json'}},
                                   body: JSON.stringify({{decision: 'approve'}})}})
               .then(r => done(r.status), e => done(String(e)));"
        ))
        .await;
    assert_eq!(status, json!(403));

    // A change outside the contract is refused on the page, before the passkey is asked.
    ana.click("details#edit summary").await;
    ana.fill("#edit-amount_cents", "100000001").await;
    ana.click("#approve-edited button").await;
    let refused = ana.status_of("#approve-edited").await;
    assert!(refused.contains("amount_cents"), "{refused}");
    ana.screenshot(&screenshots().join("approval-changes.png"))
        .await;
    assert!(ana.text().await.contains("2 still needed"));

    ana.click("#approve button").await;
    ana.wait_for_path("/console/approvals").await;
    let not_yet = call_at(&address, "create_refund_draft", large_refund(), json!({})).await;
    assert_ne!(
        not_yet["result"]["structuredContent"]["status"], "succeeded",
        "one signature of two runs nothing: {not_yet}"
    );

    let ben = enrolled(&mut driver, &base, &store, &work, "sup-ben", None).await;
    assert!(ben.text().await.contains("1 of 2"));
    ben.click("#pending a").await;
    let page = ben.text().await;
    assert!(page.contains("sup-ana"), "who approved so far: {page}");
    ben.click("#approve button").await;
    ben.wait_for_path("/console/approvals").await;
    assert!(ben.text().await.contains("Nothing waits for you"));

    // Signed twice, the task goes on by itself: the other replica reads it completed.
    let completed = |task: &Value| task["status"] == "completed";
    let done = task_until_at(&replica_url, &task, Duration::from_secs(20), completed).await;
    let drafted = &done["result"]["structuredContent"];
    assert_eq!(drafted["status"], "succeeded", "{done}");
    assert_eq!(drafted["data"]["draft_ref"], "DRAFT-1", "{done}");

    // The model's call, sent again, drafts the refund; sent once more, it is replayed.
    let made = call_at(&address, "create_refund_draft", large_refund(), json!({})).await;
    let made = &made["result"]["structuredContent"];
    assert_eq!(made["status"], "succeeded", "{made}");
    assert_eq!(made["data"]["draft_ref"], "DRAFT-1");
    let again = call_at(&address, "create_refund_draft", large_refund(), json!({})).await;
    let again = &again["result"]["structuredContent"];
    assert_eq!(again["execution"]["delivery"], "local_replay", "{again}");
    assert_eq!(again["data"]["draft_ref"], "DRAFT-1");

    // The receipt, downloaded from the page, verifies with the published files alone.
    ana.open(&format!("{base}/receipts")).await;
    let receipts = ana.text().await;
    assert!(receipts.contains("verified"), "{receipts}");
    assert!(receipts.contains("sup-ana, sup-ben"), "{receipts}");
    ana.screenshot(&screenshots().join("receipts.png")).await;
    ana.click("#receipts a[download]").await;
    let receipt = downloaded(&work.join("sup-ana")).await;
    let published = work.join("published");
    let origin = format!("http://localhost:{port}");
    desk_command(
        &[
            "--publish",
            published.to_str().unwrap(),
            "--origin",
            &origin,
        ],
        &store,
    )
    .await;
    let keys =
        KeySet::from_json(&std::fs::read(published.join("published-keys.json")).unwrap()).unwrap();
    let approvers =
        ApproverKeys::from_json(&std::fs::read(published.join("approver-keys.json")).unwrap())
            .unwrap();
    let verified = keys
        .verify_with_approvers(&receipt, &approvers)
        .expect("the downloaded receipt verifies offline");
    assert_eq!(verified.tool, "create_refund_draft");
    assert_eq!(verified.approvals.len(), 2);

    // A supervisor of another shop sees nothing of it, signed in again with their passkey.
    let cy = enrolled(&mut driver, &base, &store, &work, "sup-cy", None).await;
    cy.click("header form.inline button").await;
    cy.wait_for_path("/console/sign-in").await;
    cy.fill("#approver_id", "sup-cy").await;
    cy.screenshot(&screenshots().join("sign-in.png")).await;
    cy.click("#sign-in button").await;
    cy.wait_for_path("/console/approvals").await;
    assert!(cy.text().await.contains("Nothing waits for you"));
    cy.open(&format!("{base}/receipts")).await;
    let theirs = cy.text().await;
    assert!(theirs.contains("No receipt yet"), "{theirs}");
    assert!(!theirs.contains("create_refund_draft"), "{theirs}");

    // The auditor: the chain's state and the day's overview.
    let dee = enrolled(&mut driver, &base, &store, &work, "aud-dee", None).await;
    dee.open(&format!("{base}/audit")).await;
    let chain = dee.text().await;
    assert!(chain.contains("holds through record"), "{chain}");
    assert!(chain.contains("Check the whole log"), "{chain}");
    dee.open(&format!("{base}/audit?whole")).await;
    let chain = dee.text().await;
    assert!(chain.contains("holds through record"), "{chain}");
    assert!(chain.contains("verified through record"), "{chain}");
    dee.screenshot(&screenshots().join("audit.png")).await;
    dee.open(&format!("{base}/overview")).await;
    assert!(dee.text().await.contains("create_refund_draft"));
    dee.screenshot(&screenshots().join("overview.png")).await;

    for browser in [ana, ben, cy, dee] {
        browser.close().await;
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test]
async fn the_console_alone_serves_the_invitation_made_on_the_command_line() {
    let work = std::env::temp_dir().join(format!("refund-desk-console-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let store = work.join("desk.sqlite");
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    command
        .args(["console", "--http", "127.0.0.1:0", "--store"])
        .arg(&store);
    let (_console, address) = listening(command).await;
    let invitation = desk_command(&["--invite", "sup-ben"], &store).await;
    assert!(
        invitation.starts_with("/console/invitations/"),
        "{invitation}"
    );

    let mut visit = Visit::new(&format!("http://{address}/console"));
    let page = visit.get(invitation.trim_start_matches("/console")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("Ben Okafor"), "{}", page.text);
    let forged = visit.get("/invitations/eyJhIjoxfQ.AAAA").await;
    assert_eq!(forged.status, 404, "{}", forged.text);
    let _ = std::fs::remove_dir_all(&work);
}

/// The one `.json` file the browser saved into `downloads`, once it is whole.
async fn downloaded(downloads: &Path) -> Vec<u8> {
    for _ in 0..200 {
        let files: Vec<PathBuf> = std::fs::read_dir(downloads)
            .unwrap()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        if let [file] = files.as_slice() {
            return std::fs::read(file).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing was downloaded into {}", downloads.display());
}
