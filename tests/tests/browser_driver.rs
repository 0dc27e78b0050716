//! The console tests' browser driver ends the browsers it started, whatever their state.

use std::process::Command;
use std::time::{Duration, Instant};

use tool_contract_tests::browser::end_browsers_of;

#[test]
fn a_process_named_by_its_profile_is_ended() {
    let profile = std::env::temp_dir().join(format!("browser-profile-{}", std::process::id()));
    // A stand-in for a browser: a shell (kept from exec'ing its last command by `; true`)
    // whose command line names the profile as Chromium's does.
    let mut browser = Command::new("sh")
        .arg("-c")
        .arg("sleep 30; true")
        .arg(format!("--user-data-dir={}", profile.display()))
        .spawn()
        .expect("sh starts");
    end_browsers_of(&profile);
    let deadline = Instant::now() + Duration::from_secs(5);
    while browser.try_wait().expect("its status").is_none() {
        if Instant::now() > deadline {
            let _ = browser.kill();
            panic!("the process named by its profile outlived end_browsers_of");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
