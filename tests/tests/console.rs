//! Issue 32, the approvals console over HTTP: invited supervisors enrol and sign in with
//! passkeys, see what waits for them, and approve or reject with a signature; the page
//! itself refuses what it must (no CSRF token, another tenant, state change on GET), and says
//! so in its headers. Each person's browser is a cookie, the page's CSRF token and the JSON
//! its script posts; their authenticators are software ones.

use std::sync::Arc;

use serde_json::json;
use tool_contract::SecretKey;
use tool_contract::console::{Console, ConsoleOptions};
use tool_contract::results::RelyingParty;
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::console::{Visit, desk, invitation, serve};
use tool_contract_tests::passkey::{ORIGIN, RP_ID, SoftAuthenticator};
use tool_contract_tests::tracker::{
    Remote, builder, code, context, message, pending_approval, run,
};

#[tokio::test]
async fn two_supervisors_approve_with_their_passkeys_and_the_write_runs_once() {
    let desk = desk().await;
    let (mut ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let (mut ben, mut ben_key) = desk.enrolled("sup-ben").await;
    let call = message("m-1", "bob");
    let pending = pending_approval(&desk.dispatcher, &call).await;

    let list = ana.get("/approvals").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(list.text.contains(&pending.approval_id), "{}", list.text);
    assert!(list.text.contains("0 of 2"), "{}", list.text);
    let page = ana
        .get(&format!("/approvals/{}", pending.approval_id))
        .await;
    assert!(page.text.contains("send_message"), "{}", page.text);
    assert!(page.text.contains("2 still needed"), "{}", page.text);

    let decided = ana
        .decide(&pending.approval_id, "approve", &mut ana_key)
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    assert_eq!(decided.json()["outcome"], "approved");
    let page = ben
        .get(&format!("/approvals/{}", pending.approval_id))
        .await;
    assert!(
        page.text.contains("sup-ana"),
        "who approved so far: {}",
        page.text
    );
    assert!(
        page.text.contains("signed with their passkey"),
        "{}",
        page.text
    );
    assert_eq!(
        run(&desk.dispatcher, &call).await.result.model.status(),
        Status::Failed
    );
    assert_eq!(
        desk.remote.all_requests(),
        0,
        "one signature of two runs nothing"
    );

    let decided = ben
        .decide(&pending.approval_id, "approve", &mut ben_key)
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    assert_eq!(
        run(&desk.dispatcher, &call).await.result.model.status(),
        Status::Succeeded
    );
    assert_eq!(
        run(&desk.dispatcher, &call).await.result.model.status(),
        Status::Succeeded
    );
    assert_eq!(desk.remote.all_requests(), 1, "the write ran once");
    assert!(
        ana.get("/approvals")
            .await
            .text
            .contains("Nothing waits for you")
    );
}

#[tokio::test]
async fn a_supervisor_of_another_tenant_sees_nothing_and_cannot_ask_to_sign() {
    let desk = desk().await;
    let (mut cy, mut cy_key) = desk.enrolled("sup-cy").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;

    let list = cy.get("/approvals").await;
    assert!(!list.text.contains(&pending.approval_id), "{}", list.text);
    assert!(list.text.contains("Nothing waits for you"), "{}", list.text);
    let page = cy.get(&format!("/approvals/{}", pending.approval_id)).await;
    assert_eq!(page.status, 404);
    assert!(!page.text.contains("send_message"), "{}", page.text);
    let decided = cy
        .decide(&pending.approval_id, "approve", &mut cy_key)
        .await;
    assert_eq!(decided.status, 404, "{}", decided.text);
    let still = desk.dispatcher.pending_approval(&pending.approval_id).await;
    assert!(still.unwrap().unwrap().approvals.is_empty());
}

#[tokio::test]
async fn a_post_without_its_csrf_token_is_refused_and_changes_nothing() {
    let desk = desk().await;
    let (mut ana, _) = desk.enrolled("sup-ana").await;
    let (mut ben, _) = desk.enrolled("sup-ben").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    let statement = format!("/approvals/{}/statement", pending.approval_id);
    ana.get("/approvals").await;
    ben.get("/approvals").await;

    let without = ana
        .post_with(&statement, &json!({"decision": "approve"}), None)
        .await;
    assert_eq!(without.status, 403, "{}", without.text);
    assert_eq!(without.json()["error"], "csrf");
    let bens_token = ben.csrf.clone();
    let anothers = ana
        .post_with(
            &statement,
            &json!({"decision": "approve"}),
            Some(&bens_token),
        )
        .await;
    assert_eq!(
        anothers.status, 403,
        "another visit's token: {}",
        anothers.text
    );
    let sign_out = ana.post_with("/sign-out", &json!({}), None).await;
    assert!(sign_out.status.is_client_error(), "{}", sign_out.status);
    assert_eq!(ana.get("/approvals").await.status, 200, "still signed in");
    let with = ana.post(&statement, &json!({"decision": "approve"})).await;
    assert_eq!(with.status, 200, "{}", with.text);
}

#[tokio::test]
async fn nothing_changes_state_on_get() {
    let desk = desk().await;
    let (mut ana, _) = desk.enrolled("sup-ana").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    for path in [
        format!("/approvals/{}/decision", pending.approval_id),
        format!("/approvals/{}/statement", pending.approval_id),
        "/sign-out".to_owned(),
        "/sign-in/options".to_owned(),
    ] {
        assert_eq!(ana.get(&path).await.status, 405, "{path}");
    }
    assert_eq!(ana.get("/approvals").await.status, 200, "still signed in");
}

#[tokio::test]
async fn every_page_carries_a_policy_without_inline_script_and_a_strict_cookie() {
    let desk = desk().await;
    let mut visit = Visit::new(&desk.base);
    for path in ["/sign-in", "/approvals", "/console.js", "/no-such-page"] {
        let answer = visit.get(path).await;
        let policy = answer.header("content-security-policy");
        assert!(policy.contains("script-src 'self'"), "{path}: {policy}");
        assert!(
            policy.contains("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
        assert_eq!(answer.header("x-content-type-options"), "nosniff");
    }
    let first = Visit::new(&desk.base).get("/sign-in").await;
    let cookie = first.header("set-cookie");
    for attribute in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/console"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!first.text.contains("<script>"), "no inline script");
}

#[tokio::test]
async fn a_loopback_console_sets_its_cookie_without_secure() {
    let remote = Remote::new();
    let origin = "http://localhost:8080";
    let party = RelyingParty::new("localhost", "Local desk", [origin]).unwrap();
    let dispatcher = builder(&remote).relying_party(party).build().unwrap();
    let console = Console::new(
        Arc::new(dispatcher),
        SecretKey::new([0x33; 32]).unwrap(),
        ConsoleOptions::new(origin, ""),
    )
    .unwrap();
    let base = serve(&console).await;
    let answer = Visit::new(&base).get("/sign-in").await;
    let cookie = answer.header("set-cookie");
    assert!(
        cookie.contains("HttpOnly") && !cookie.contains("Secure"),
        "{cookie}"
    );
}

#[tokio::test]
async fn a_console_is_refused_for_an_origin_its_relying_party_does_not_serve() {
    let remote = Remote::new();
    let party = RelyingParty::new(RP_ID, "Acme desk", [ORIGIN]).unwrap();
    let dispatcher = Arc::new(builder(&remote).relying_party(party).build().unwrap());
    let key = || SecretKey::new([0x33; 32]).unwrap();
    let elsewhere = ConsoleOptions::new("https://evil.example", "");
    assert!(Console::new(Arc::clone(&dispatcher), key(), elsewhere).is_err());
    let without_party = Arc::new(builder(&remote).build().unwrap());
    let options = ConsoleOptions::new(ORIGIN, "");
    assert!(Console::new(without_party, key(), options).is_err());
}

#[tokio::test]
async fn an_invitation_holds_until_its_approver_has_a_passkey_and_a_forged_one_never() {
    let desk = desk().await;
    let invited = invitation(&desk.console, "sup-ana").await;
    let mut forged = invited.clone();
    forged.pop();
    forged.push(if invited.ends_with('A') { 'B' } else { 'A' });
    assert_eq!(Visit::new(&desk.base).get(&forged).await.status, 404);

    let mut visit = Visit::new(&desk.base);
    let enrolled = visit.enrol(&invited, &mut SoftAuthenticator::new()).await;
    assert_eq!(enrolled.status, 200, "{}", enrolled.text);
    let again = Visit::new(&desk.base).get(&invited).await;
    assert_eq!(again.status, 404, "used once: {}", again.text);
    assert!(
        desk.console
            .invitation("sup-ana", std::time::Duration::from_secs(60))
            .await
            .is_err()
    );
    assert!(
        desk.console
            .invitation("nobody", std::time::Duration::from_secs(60))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_supervisor_signs_out_and_in_again_with_the_passkey_enrolled() {
    let desk = desk().await;
    let (ana, mut key) = desk.enrolled("sup-ana").await;
    let csrf = ana.csrf.clone();
    let signed_out = tool_contract_tests::http::send(
        http::Method::POST,
        &format!("{}/sign-out", desk.base),
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("cookie", ana.cookie.clone().unwrap().as_str()),
        ],
        format!("csrf={csrf}").into_bytes(),
    )
    .await;
    assert_eq!(signed_out.status, 303, "{}", signed_out.text);
    let mut after = Visit::new(&desk.base);
    after.cookie = signed_out
        .header("set-cookie")
        .split(';')
        .next()
        .map(str::to_owned);
    let home = after.get("/approvals").await;
    assert_eq!(home.status, 303, "signed out, sent to sign in");
    assert_eq!(home.header("location"), "/console/sign-in");

    let signed_in = after.sign_in("sup-ana", &mut key).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    assert_eq!(after.get("/approvals").await.status, 200);
    // Ben has no passkey: his sign-in is offered like anyone's, and no passkey signs it.
    let wrong = Visit::new(&desk.base)
        .sign_in_with_anothers("sup-ben", "sup-ana", &mut key)
        .await;
    assert_eq!(wrong.status, 401, "no passkey of his: {}", wrong.text);
}

#[tokio::test]
async fn another_persons_passkey_does_not_sign_anyone_in() {
    let desk = desk().await;
    let (_, _) = desk.enrolled("sup-ana").await;
    let (_, mut bens_key) = desk.enrolled("sup-ben").await;
    let mut visit = Visit::new(&desk.base);
    visit.get("/sign-in").await;
    let begun = visit
        .post("/sign-in/options", &json!({"approver_id": "sup-ana"}))
        .await
        .json();
    // Ben's authenticator signs Ana's challenge with his own passkey.
    let ben = desk.dispatcher.approver("sup-ben").await.unwrap().unwrap();
    let mut options = begun["options"].clone();
    options["publicKey"]["allowCredentials"] =
        json!([{"type": "public-key", "id": ben.credentials[0].credential_id}]);
    let credential = bens_key.sign(&options).await;
    let credential: serde_json::Value = serde_json::from_slice(&credential).unwrap();
    let refused = visit
        .post(
            "/sign-in",
            &json!({"ceremony": begun["ceremony"], "credential": credential}),
        )
        .await;
    assert_eq!(refused.status, 401, "{}", refused.text);
    assert_eq!(visit.get("/approvals").await.status, 303, "not signed in");
}

#[tokio::test]
async fn sign_in_limits_count_a_browsers_failures_never_an_id_anyone_types() {
    let desk = desk().await;
    let (_, mut ana_key) = desk.enrolled("sup-ana").await;
    // Strangers ask to sign in as her, many times, from visits of their own.
    for _ in 0..3 {
        let mut stranger = Visit::new(&desk.base);
        stranger.get("/sign-in").await;
        for _ in 0..11 {
            let asked = stranger
                .post("/sign-in/options", &json!({"approver_id": "sup-ana"}))
                .await;
            assert_eq!(asked.status, 200, "{}", asked.text);
        }
    }
    let mut ana = Visit::new(&desk.base);
    let signed_in = ana.sign_in("sup-ana", &mut ana_key).await;
    assert_eq!(
        signed_in.status, 200,
        "she is not locked out: {}",
        signed_in.text
    );

    // A browser whose sign-ins fail is refused options once it has failed ten times.
    let (_, mut ben_key) = desk.enrolled("sup-ben").await;
    let mut prober = Visit::new(&desk.base);
    let mut statuses = Vec::new();
    for _ in 0..11 {
        let tried = prober
            .sign_in_with_anothers("sup-ana", "sup-ben", &mut ben_key)
            .await;
        statuses.push(tried.status.as_u16());
    }
    assert!(
        statuses[..10].iter().all(|&status| status == 401),
        "{statuses:?}"
    );
    assert_eq!(statuses[10], 429, "{statuses:?}");
    // Ana, in her own browser, is not.
    let mut again = Visit::new(&desk.base);
    assert_eq!(again.sign_in("sup-ana", &mut ana_key).await.status, 200);
}

#[tokio::test]
async fn sign_in_answers_do_not_tell_which_ids_exist() {
    let desk = desk().await;
    desk.enrolled("sup-ana").await;
    let mut visit = Visit::new(&desk.base);
    visit.get("/sign-in").await;
    let mut answers = Vec::new();
    // Enrolled with a passkey; in the directory without one; nobody.
    for id in ["sup-ana", "sup-ben", "sup-nobody"] {
        let asked = visit
            .post("/sign-in/options", &json!({"approver_id": id}))
            .await;
        assert_eq!(asked.status, 200, "{id}: {}", asked.text);
        let options = asked.json()["options"]["publicKey"].clone();
        let allowed = options["allowCredentials"].as_array().unwrap().clone();
        assert_eq!(allowed.len(), 1, "{id}");
        let mut keys: Vec<String> = options.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        answers.push((keys, allowed[0]["type"].clone()));
    }
    assert!(
        answers.windows(2).all(|pair| pair[0] == pair[1]),
        "{answers:?}"
    );
    // A decoy is the same on every asking, as a real credential id is.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut visit = Visit::new(&desk.base);
        visit.get("/sign-in").await;
        let asked = visit
            .post("/sign-in/options", &json!({"approver_id": "sup-nobody"}))
            .await;
        ids.push(asked.json()["options"]["publicKey"]["allowCredentials"][0]["id"].clone());
    }
    assert_eq!(ids[0], ids[1]);
}

/// What an unknown id is offered takes the shape of an enrolled approver's passkeys: as many
/// credential ids, each as long, never one odd-sized decoy beside 16-byte real ids.
#[tokio::test]
async fn sign_in_options_for_an_unknown_id_look_like_an_enrolled_approvers() {
    use base64::Engine as _;
    let desk = desk().await;
    desk.enrolled("sup-ana").await;
    // Ben holds two passkeys: the second enrolled through the dispatcher.
    desk.enrolled("sup-ben").await;
    let mut second = tool_contract_tests::passkey::SoftAuthenticator::new();
    let enrollment = desk.dispatcher.begin_enrollment("sup-ben").await.unwrap();
    let answer = second.register(&enrollment.options).await;
    desk.dispatcher
        .finish_enrollment(&enrollment, &answer)
        .await
        .unwrap();
    let shape = |id: &str| {
        let desk = &desk;
        let id = id.to_owned();
        async move {
            let mut visit = Visit::new(&desk.base);
            visit.get("/sign-in").await;
            let asked = visit
                .post("/sign-in/options", &json!({"approver_id": id}))
                .await;
            assert_eq!(asked.status, 200, "{}", asked.text);
            asked.json()["options"]["publicKey"]["allowCredentials"]
                .as_array()
                .unwrap()
                .iter()
                .map(|credential| {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(credential["id"].as_str().unwrap())
                        .unwrap()
                        .len()
                })
                .collect::<Vec<usize>>()
        }
    };
    let enrolled = [shape("sup-ana").await, shape("sup-ben").await];
    assert_eq!(enrolled[0].len(), 1);
    assert_eq!(enrolled[1].len(), 2);
    let mut seen = std::collections::HashSet::new();
    for n in 0..24 {
        let unknown = shape(&format!("sup-nobody-{n}")).await;
        assert!(
            enrolled.contains(&unknown),
            "{unknown:?} is no approver's shape"
        );
        seen.insert(unknown);
    }
    assert_eq!(seen.len(), 2, "unknown ids take both shapes");
}

#[tokio::test]
async fn the_preview_shows_hidden_characters_escaped() {
    let desk = desk().await;
    let (mut ana, _) = desk.enrolled("sup-ana").await;
    let call = context(
        "m-1",
        "send_message",
        json!({"to": "bob", "text": "invoice\u{202e}fdp.exe"}),
        "m-1",
        "m-1",
    );
    let pending = pending_approval(&desk.dispatcher, &call).await;
    let page = ana
        .get(&format!("/approvals/{}", pending.approval_id))
        .await;
    assert!(page.text.contains(r"invoice\u202efdp.exe"), "{}", page.text);
    assert!(
        !page.text.contains('\u{202e}'),
        "the character itself never reaches the page"
    );
}

#[tokio::test]
async fn a_rejection_with_its_reason_refuses_the_write() {
    let desk = desk().await;
    let (mut ana, mut key) = desk.enrolled("sup-ana").await;
    let call = message("m-1", "bob");
    let pending = pending_approval(&desk.dispatcher, &call).await;
    let rejected = ana
        .decide(&pending.approval_id, "reject_wrong_details", &mut key)
        .await;
    assert_eq!(rejected.status, 200, "{}", rejected.text);
    assert_eq!(rejected.json()["outcome"], "rejected");
    let after = run(&desk.dispatcher, &call).await;
    assert_eq!(code(&after), Some(ErrorCode::RejectedWrongDetails));
    assert_eq!(desk.remote.all_requests(), 0);
}

#[tokio::test]
async fn a_session_ends_when_its_passkey_is_revoked() {
    let desk = desk().await;
    let (mut ana, _) = desk.enrolled("sup-ana").await;
    assert_eq!(ana.get("/approvals").await.status, 200);
    let approver = desk.dispatcher.approver("sup-ana").await.unwrap().unwrap();
    let credential_id = approver.credentials[0].credential_id.clone();
    desk.dispatcher
        .revoke_credential("sup-ana", &credential_id)
        .await
        .expect("revoked");
    assert_eq!(
        ana.get("/approvals").await.status,
        303,
        "sent to sign in again"
    );
}

#[tokio::test]
async fn a_statement_running_past_the_consoles_statement_lifetime_is_refused() {
    let desk = desk().await;
    let (mut ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    // A statement running an hour, within the dispatcher's lifetime but past the console's
    // five minutes, as a client that made its own statement would post it.
    let statement = desk
        .dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            tool_contract::results::Decision::Approve,
            None,
            std::time::Duration::from_secs(3600),
        )
        .await
        .unwrap();
    let request = desk.dispatcher.signing_request(&statement).await.unwrap();
    let credential: serde_json::Value =
        serde_json::from_slice(&ana_key.sign(&request.options).await).unwrap();
    ana.get(&format!("/approvals/{}", pending.approval_id))
        .await;
    let posted = ana
        .post(
            &format!("/approvals/{}/decision", pending.approval_id),
            &json!({"statement": statement, "edited_arguments": null, "credential": credential}),
        )
        .await;
    assert_eq!(posted.status, 403, "{}", posted.text);
    let still = desk.dispatcher.pending_approval(&pending.approval_id).await;
    assert!(still.unwrap().unwrap().approvals.is_empty());
    // The console's own statement, of its own lifetime, is taken.
    let decided = ana
        .decide(&pending.approval_id, "approve", &mut ana_key)
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
}

#[tokio::test]
async fn a_post_from_a_page_of_another_origin_is_refused_by_the_mcp_endpoints_rule() {
    let desk = desk().await;
    let (mut ana, _, statement) = desk.ana_on_a_pending_approval().await;
    // A valid cookie and CSRF token, posted by another site's page.
    for origin in [
        "http://evil.example",
        "https://desk.example.evil.example",
        "null",
    ] {
        let refused = ana
            .post_from(origin, &statement, &json!({"decision": "approve"}))
            .await;
        assert_eq!(refused.status, 403, "{origin}: {}", refused.text);
        assert_eq!(refused.json()["error"], "origin", "{origin}");
        let sign_out = ana.post_from(origin, "/sign-out", &json!({})).await;
        assert_eq!(sign_out.status, 403, "{origin}");
    }
    // The console's own origin, and a loopback one, as the MCP endpoint allows them.
    for origin in [ORIGIN, "https://DESK.example/", "http://localhost:8932"] {
        let asked = ana
            .post_from(origin, &statement, &json!({"decision": "approve"}))
            .await;
        assert_eq!(asked.status, 200, "{origin}: {}", asked.text);
    }
}

#[tokio::test]
async fn signing_out_ends_the_session_on_every_replica() {
    let desk = desk().await;
    let (ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    // A second replica's console: the same key, the same store, nothing else shared.
    let replica = Console::new(
        Arc::clone(&desk.dispatcher),
        SecretKey::new([0x33; 32]).unwrap(),
        ConsoleOptions::new(ORIGIN, "/console"),
    )
    .unwrap();
    let replica_base = serve(&replica).await;
    let keeping = |base: &str| {
        let mut kept = Visit::new(base);
        kept.cookie = ana.cookie.clone();
        kept.csrf = ana.csrf.clone();
        kept
    };
    assert_eq!(keeping(&replica_base).get("/approvals").await.status, 200);

    let signed_out = tool_contract_tests::http::send(
        http::Method::POST,
        &format!("{}/sign-out", desk.base),
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("cookie", ana.cookie.clone().unwrap().as_str()),
        ],
        format!("csrf={}", ana.csrf).into_bytes(),
    )
    .await;
    assert_eq!(signed_out.status, 303, "{}", signed_out.text);

    // The old cookie, kept by whoever copied it, opens nothing on either replica.
    for base in [&desk.base, &replica_base] {
        let mut kept = keeping(base);
        assert_eq!(kept.get("/approvals").await.status, 303, "{base}");
        let asked = kept
            .post(
                &format!("/approvals/{}/statement", pending.approval_id),
                &json!({"decision": "approve"}),
            )
            .await;
        assert!(asked.status.is_client_error(), "{base}: {}", asked.status);
    }
    let still = desk.dispatcher.pending_approval(&pending.approval_id).await;
    assert!(still.unwrap().unwrap().approvals.is_empty());
    // She signs in again, anew.
    let mut again = Visit::new(&desk.base);
    assert_eq!(again.sign_in("sup-ana", &mut ana_key).await.status, 200);
    assert_eq!(again.get("/approvals").await.status, 200);
}
