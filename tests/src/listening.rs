//! A server process the tests start, and the address it says it listens on.

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `command` (stopped when the returned child is dropped) and waits for the line of
/// its stderr that starts `listening on http://`; returns the child and the address after it.
/// The rest of its stderr is read and dropped, so the process never blocks on it.
pub async fn listening(mut command: Command) -> (Child, String) {
    let mut process = command
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut stderr = BufReader::new(process.stderr.take().expect("its stderr")).lines();
    let address = loop {
        let line = stderr
            .next_line()
            .await
            .expect("its stderr reads")
            .expect("the server names its address before it ends");
        if let Some(address) = line.strip_prefix("listening on http://") {
            break address.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    (process, address)
}
