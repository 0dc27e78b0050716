//! The HTTP answers the Streamable HTTP transport gives itself, before rmcp sees a request.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

/// An HTTP response of the transport.
pub(super) type Reply = Response<BoxBody<Bytes, Infallible>>;

/// `status`, with `text` for a person to read.
pub(super) fn text(status: StatusCode, text: &'static str) -> Reply {
    body(
        status,
        "text/plain; charset=utf-8",
        Bytes::from_static(text.as_bytes()),
    )
}

/// `status`, with `bytes` of `content_type`.
pub(super) fn body(status: StatusCode, content_type: &'static str, bytes: Bytes) -> Reply {
    let mut response = Response::new(Full::new(bytes).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
