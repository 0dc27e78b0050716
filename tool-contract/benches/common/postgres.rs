//! The benches' own statements against their PostgreSQL database.

/// Runs `sql` in the bench database at `url`, outside any store.
pub async fn execute(url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the bench database is reachable");
    let driver = tokio::spawn(connection);
    client.batch_execute(sql).await.expect("the statement runs");
    drop(client);
    let _ = driver.await;
}
