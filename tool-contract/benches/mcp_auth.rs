//! What authenticating a request costs (feature `mcp-auth`:
//! `cargo bench -p tool-contract --features mcp-auth --bench mcp_auth`), in one run:
//!
//! - `http_tools_call/plain`: a read over Streamable HTTP (2026-07-28, one kept-alive
//!   connection) to a server of one principal, no token;
//! - `http_tools_call/plain_with_header`: the same, with the bearer token's `Authorization`
//!   header sent along (and ignored): what its bytes alone cost;
//! - `http_tools_call/cached_token`: the same read to an authenticated server, with a JWT
//!   access token it has verified before (its SHA-256 looked up, the scopes checked);
//! - `verify/cached`: `JwtVerifier::verify` of a token it verified before;
//! - `verify_first_sight/{es256,rs256}`: `JwtVerifier::verify` of a token it has not seen
//!   (its issuer's keys already fetched): the header, the key, the signature, the claims.
//!
//! The keys below are the bench's own, made for it, and sign nothing else.

mod common;

use std::convert::Infallible;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::net::TcpListener;
use tool_contract::Principal;
use tool_contract::dispatch::Dispatcher;
use tool_contract::mcp::McpServer;
use tool_contract::mcp::auth::{Issuer, JwtVerifier, ResourceServer, TokenVerifier};

/// The bench issuer's P-256 key, PKCS#8 DER.
const ES256_KEY: &str = concat!(
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgj4ycbJz2s2zsqNE2nh4ViSlqgGR1oJOwHs1z5mbe",
    "tsehRANCAAQ5k0KflyGbKfo7YaTEZPp4/ImfXHu5KByF0EkEQNMUY4a4aeULjCAxUvrwhxD+dxsm0j2IzbxIHg1T",
    "5b65/bUX",
);

/// Its RSA key, PKCS#8 DER.
const RS256_KEY: &str = concat!(
    "MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDNKdRVvFi/6ok50gfRAaPse4ooE665ATr/RDbU",
    "f8UUBWHltCEG2BDPu9p1/tu9JPA9XrrqnG7osPBPYmmtF7HAMd4WtslTs3yPK7wifUtd2pBtF2LmavQD+cRsWeJ7",
    "SQEkJ7F5114zaLZEpqLXS7RLe77E+1PpAKt3nfaw8OmmlryYdOenbpcMQyiVChEtvN+ApEzFyXW09chELxjoWFhm",
    "psPrOFwbChcXcQ/emoE2KPCqjYRlF/3/S606+tOvDI25IT2KVyarO7IUAIvWlfXQdwo4c8iX98TnCkNvQgBrybEV",
    "givqukeGGH/PaIRFG4sCNl0LfIp2gornNtplKJz1AgMBAAECggEAZT0cadhAxSdDYvRY5hKUpMfLg34+7E0Go1sy",
    "YUbRZdFIHzT1TS7GkPOmWC6UmS/GmsoJm2bpNcrGMq4h7oewL2KMMJIvI64Aq5eNxUklrSECvspZA9HIKsQP4NWz",
    "9FkwhnpN0g1sDxs/Qf4mge36AHuGRiatH9+0PRkGWAbxjUGXNyR61O5YCc8DDWyE1PngrCz3XmEaE0QsusYT4vNG",
    "ntzwwBmtDdlyZ+OrcldT4KxDiL2w0kXlFuH3xMx+xCp0O4/UsshQ7UGNU/GjzMGMsWbzgddj20YphFFQa5wE2tkQ",
    "t0D86356UDMyuh5ySlL5i2FtRhP4WrLptyqrJDCKWwKBgQDyE/Qg4sM9ryCVR3QiJ8Sxl0le2Gzq8tnVIPVfBO+D",
    "CC2B0iRVeUTqQKUC+5D5dXriqY7vJTn6IgHfuMCtVdrKmfUA/M1QruQTOjKEG68uFK9sz0wr9vnYN/Bjfxmix9Na",
    "vVuuJmt5nTqnWc5plwXPK4ez3sZ27UTXD+/2hSZ0OwKBgQDY9mSmqmD8e+Z3Wyg5PW5teAQ7m7hK/+5osNs+RYb5",
    "H+SjV4lCyRfP+DrSCQARpEi2VHuft/yz3vE5rc+GRf8NkVxfLDT5ewW+lxCsVys16ruCEARqaIrqFnMwdNu5I4iP",
    "uZpSLWvkrLh5gBPTV7sewh7ijcmQ6qI0dbBuk54QjwKBgEFS+xzotFDv8jX2SzNwUdaugYETnAimsfueYjha55sP",
    "WOBgaaebCuq/uQeeBRgcCKYjpUuJWyTRinnprCzaLyle9Eto7KqqFyfNG5aktdgUguY05lQy2GbtaXQf9zYDAFjL",
    "InNTMMtnj01boaTCuTGXiI4UPrAXBO2YAmQeuCrDAoGAb+wrYA7kmVsROOE9jsmx/aa8CEP8fjQouLkDYMxdJIbf",
    "W6P8mwdB0XcsYM1jy7YEDIroeyxeoCuSJT8Unx/cwxMJo88aRNjBzeAAKeeN0vKUaDP7Eyl6/+c05Ppjns5F1F7a",
    "zSnBTuYLBCKeF5haXzOk2xppsOhZZNaRfXmJQOECgYAxUlMLRSDO8gms8eGrZh19E2tU8lLzZeYq+/kHT0WHjBH7",
    "0aIl7NcVTD0vPpfwwEkGDAjpucdoJUKollxr6OfPsPair0b/Vd+YkgMthLRhEBqgfdy7EmPzQv9VzaZnUyUuRG5l",
    "0A0us6kZDWPKJ4VxfbYJcm8E4dgLS8b7zG5BcA==",
);

/// The public halves, as the issuer publishes them: the P-256 point and the RSA modulus.
const ES256_X: &str = "OZNCn5chmyn6O2GkxGT6ePyJn1x7uSgchdBJBEDTFGM";
const ES256_Y: &str = "hrhp5QuMIDFS-vCHEP53GybSPYjNvEgeDVPlvrn9tRc";
const RS256_N: &str = concat!(
    "zSnUVbxYv-qJOdIH0QGj7HuKKBOuuQE6_0Q21H_FFAVh5bQhBtgQz7vadf7bvSTwPV666pxu6LDwT2JprRexwDHe",
    "FrbJU7N8jyu8In1LXdqQbRdi5mr0A_nEbFnie0kBJCexeddeM2i2RKai10u0S3u-xPtT6QCrd532sPDpppa8mHTn",
    "p26XDEMolQoRLbzfgKRMxcl1tPXIRC8Y6FhYZqbD6zhcGwoXF3EP3pqBNijwqo2EZRf9_0utOvrTrwyNuSE9ilcm",
    "qzuyFACL1pX10HcKOHPIl_fE5wpDb0IAa8mxFYIr6rpHhhh_z2iERRuLAjZdC3yKdoKK5zbaZSic9Q",
);

/// The key set the bench issuer publishes.
fn jwks() -> Bytes {
    let keys = json!({ "keys": [
        { "kty": "EC", "crv": "P-256", "x": ES256_X, "y": ES256_Y, "kid": "bench-es", "alg": "ES256", "use": "sig" },
        { "kty": "RSA", "n": RS256_N, "e": "AQAB", "kid": "bench-rs", "alg": "RS256", "use": "sig" },
    ] });
    Bytes::from(keys.to_string())
}

fn dispatcher() -> Arc<Dispatcher> {
    Arc::new(common::orders::dispatcher())
}

/// Serves the key set at `/jwks` on a loopback port; the issuer URL.
async fn issuer() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let keys = jwks();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let keys = keys.clone();
            tokio::spawn(async move {
                let serve = hyper::service::service_fn(move |_| {
                    let keys = keys.clone();
                    async move { Ok::<_, Infallible>(hyper::Response::new(Full::new(keys))) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), serve)
                    .await;
            });
        }
    });
    url
}

fn verifier(issuer: &str) -> JwtVerifier {
    let issuer = Issuer::new(issuer)
        .unwrap()
        .with_jwks_uri(&format!("{issuer}/jwks"))
        .unwrap();
    JwtVerifier::new([issuer]).unwrap()
}

/// A token of `issuer` for `resource`, signed with the bench's key for `algorithm`.
fn token(issuer: &str, resource: &str, algorithm: Algorithm) -> String {
    let (key, kid) = match algorithm {
        Algorithm::ES256 => (EncodingKey::from_ec_der(&der(ES256_KEY)), "bench-es"),
        _ => (EncodingKey::from_rsa_der(&pkcs1(RS256_KEY)), "bench-rs"),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut header = Header::new(algorithm);
    header.typ = Some("at+jwt".to_owned());
    header.kid = Some(kid.to_owned());
    let claims = json!({
        "iss": issuer, "aud": resource, "sub": "alice", "exp": now + 3600, "iat": now,
        "scope": "tools:read", "client_id": "bench", "jti": "bench-1",
    });
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn der(base64: &str) -> Vec<u8> {
    STANDARD.decode(base64).unwrap()
}

/// The PKCS#1 key inside a PKCS#8 RSA key (the RSA signer reads PKCS#1): its last 1190-odd
/// bytes, after the fixed 26-byte PKCS#8 prefix of a 2048-bit key.
fn pkcs1(base64: &str) -> Vec<u8> {
    der(base64)[26..].to_vec()
}

fn bench(c: &mut Criterion) {
    // One thread for client and servers: no scheduling between cores in the figures.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let issuer_url = runtime.block_on(issuer());

    let plain = runtime.block_on(serve(None, &issuer_url));
    let authenticated = runtime.block_on(serve(Some(()), &issuer_url));
    let resource = format!("http://{authenticated}/mcp");
    let bearer = format!("Bearer {}", token(&issuer_url, &resource, Algorithm::ES256));

    let mut group = c.benchmark_group("http_tools_call");
    group.measurement_time(Duration::from_secs(8));
    let mut sender = runtime.block_on(common::http_client::connect(&plain));
    group.bench_function("plain", |b| {
        b.iter(|| runtime.block_on(common::http_client::call(&mut sender, &plain, None)));
    });
    group.bench_function("plain_with_header", |b| {
        b.iter(|| {
            runtime.block_on(common::http_client::call(
                &mut sender,
                &plain,
                Some(&bearer),
            ))
        });
    });
    let mut sender = runtime.block_on(common::http_client::connect(&authenticated));
    group.bench_function("cached_token", |b| {
        b.iter(|| {
            runtime.block_on(common::http_client::call(
                &mut sender,
                &authenticated,
                Some(&bearer),
            ))
        });
    });
    group.finish();

    let mut group = c.benchmark_group("verify");
    let cached = verifier(&issuer_url);
    let seen = token(&issuer_url, resource_of_bench(), Algorithm::ES256);
    runtime
        .block_on(cached.verify(&seen, resource_of_bench()))
        .expect("the bench token verifies");
    group.bench_function("cached", |b| {
        b.iter(|| {
            runtime
                .block_on(cached.verify(black_box(&seen), resource_of_bench()))
                .unwrap()
        });
    });
    group.finish();

    let mut group = c.benchmark_group("verify_first_sight");
    let resource = resource_of_bench();
    let uncached = verifier(&issuer_url).with_cache_lifetime(Duration::ZERO);
    for (name, algorithm) in [("es256", Algorithm::ES256), ("rs256", Algorithm::RS256)] {
        let token = token(&issuer_url, resource, algorithm);
        runtime
            .block_on(uncached.verify(&token, resource))
            .expect("the bench token verifies");
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime
                    .block_on(uncached.verify(black_box(&token), resource))
                    .unwrap()
            });
        });
    }
    group.finish();
}

fn resource_of_bench() -> &'static str {
    "https://mcp.example.com/mcp"
}

/// A server of the bench's read on a loopback port: of one principal, or (with `auth`)
/// authenticating each request with tokens of `issuer`. Its address.
async fn serve(auth: Option<()>, issuer: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = match auth {
        None => McpServer::new(dispatcher(), Principal::new(issuer, "alice")),
        Some(()) => {
            let resource =
                ResourceServer::new(&format!("http://{address}/mcp"), verifier(issuer)).unwrap();
            McpServer::authenticated(dispatcher(), resource).unwrap()
        }
    };
    tokio::spawn(server.serve_http(listener));
    address
}

criterion_group!(benches, bench);
criterion_main!(benches);
