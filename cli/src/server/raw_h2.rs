//! A lean gRPC client for `docket bench-load --raw-h2`: unary
//! `docket.v1.Ledger/Append` calls built by hand on the `h2` crate, with each
//! request body (the 5-byte gRPC message prefix and the protobuf) encoded
//! before the clock starts.
//!
//! It is a load generator, not a client library: it speaks only what the
//! benchmark needs (plain-text HTTP/2, one unary method, identity encoding),
//! and checks every answer as a client must (HTTP status 200, `grpc-status`
//! 0 from the trailers or a trailers-only answer, one well-framed
//! `AppendReceipt`). What it saves is the tonic client stack's work per call
//! (a buffer task, tower layers, encoding), which on a machine shared with
//! the server is CPU taken from the server being measured; pgbench, the
//! PostgreSQL side of `scripts/bench-vs-postgres.sh`, is such a lean client.

use anyhow::{Context as _, Result, anyhow, bail};
use docket_proto::v1 as pb;
use prost::Message as _;
use tonic::codegen::Bytes;
use tonic::codegen::http::{self, HeaderMap, Request, Uri};

/// The unary append's path.
const APPEND_PATH: &str = "/docket.v1.Ledger/Append";

/// One HTTP/2 connection sending unary appends one at a time.
pub struct RawAppender {
    send: h2::client::SendRequest<Bytes>,
    uri: Uri,
}

impl RawAppender {
    /// Connects to `url` (`http://HOST:PORT`; TLS is not spoken here).
    pub async fn connect(url: &str) -> Result<Self> {
        let base: Uri = url.parse().with_context(|| format!("server URL {url}"))?;
        if base.scheme_str() != Some("http") {
            bail!("--raw-h2 speaks plain-text HTTP/2 only: give an http:// server URL, not {url}");
        }
        let authority = base
            .authority()
            .ok_or_else(|| anyhow!("server URL {url} names no host"))?
            .clone();
        let port = authority.port_u16().unwrap_or(80);
        let tcp = tokio::net::TcpStream::connect((authority.host(), port))
            .await
            .with_context(|| format!("connecting to {authority}"))?;
        tcp.set_nodelay(true)?;
        let (send, connection) = h2::client::handshake(tcp)
            .await
            .with_context(|| format!("HTTP/2 handshake with {authority}"))?;
        tokio::spawn(async move {
            // The connection ends with the run; an error surfaces on the
            // next call instead.
            let _ = connection.await;
        });
        let uri = Uri::builder()
            .scheme("http")
            .authority(authority)
            .path_and_query(APPEND_PATH)
            .build()?;
        Ok(Self { send, uri })
    }

    /// A request body: the gRPC message prefix (not compressed, length
    /// big-endian) and the statement's protobuf.
    pub fn encode(statement: &pb::SignedStatement) -> Bytes {
        let message = statement.encode_to_vec();
        let mut body = Vec::with_capacity(5 + message.len());
        body.push(0);
        // A statement is far below 4 GiB (the server refuses more than its
        // message limit anyway).
        body.extend_from_slice(
            &u32::try_from(message.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        body.extend_from_slice(&message);
        Bytes::from(body)
    }

    /// Sends one encoded append and waits for its receipt.
    pub async fn append(&mut self, body: Bytes) -> Result<pb::AppendReceipt> {
        let request = Request::post(self.uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())?;
        let mut send = self.send.clone().ready().await?;
        let (response, mut stream) = send.send_request(request, false)?;
        stream.send_data(body, true)?;
        let response = response.await?;
        if response.status() != http::StatusCode::OK {
            bail!("HTTP status {}", response.status());
        }
        let (parts, mut body) = response.into_parts();
        if grpc_status(&parts.headers).is_some() {
            // Trailers-only: an error (or an empty answer) in the headers.
            check_status(&parts.headers)?;
            bail!("an OK answer carried no receipt");
        }
        let mut message = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk?;
            body.flow_control().release_capacity(chunk.len())?;
            message.extend_from_slice(&chunk);
        }
        let trailers = body
            .trailers()
            .await?
            .ok_or_else(|| anyhow!("the answer ended without trailers"))?;
        check_status(&trailers)?;
        let Some((&[0], rest)) = message.split_first_chunk::<1>() else {
            bail!("the receipt is compressed or missing");
        };
        let Some((len, receipt)) = rest.split_first_chunk::<4>() else {
            bail!("the receipt's length prefix is cut short");
        };
        if u32::from_be_bytes(*len) as usize != receipt.len() {
            bail!("the receipt's length prefix does not match its bytes");
        }
        Ok(pb::AppendReceipt::decode(receipt)?)
    }
}

fn grpc_status(headers: &HeaderMap) -> Option<&str> {
    headers.get("grpc-status").and_then(|v| v.to_str().ok())
}

/// `grpc-status` 0, or the error the server gave.
fn check_status(headers: &HeaderMap) -> Result<()> {
    match grpc_status(headers) {
        Some("0") => Ok(()),
        Some(code) => bail!(
            "grpc-status {code}: {}",
            headers
                .get("grpc-message")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        ),
        None => bail!("the answer carried no grpc-status"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, http::HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_grpc_status_zero_is_success() {
        assert!(check_status(&headers(&[("grpc-status", "0")])).is_ok());
        let refused = check_status(&headers(&[
            ("grpc-status", "3"),
            ("grpc-message", "bad signature"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(refused.contains("grpc-status 3") && refused.contains("bad signature"));
        assert!(
            check_status(&headers(&[])).is_err(),
            "no status is no success"
        );
    }

    #[test]
    fn a_body_is_the_grpc_prefix_then_the_protobuf() {
        let st = pb::SignedStatement {
            kind: "x-note".into(),
            payload: b"{}".to_vec(),
            ..Default::default()
        };
        let body = RawAppender::encode(&st);
        let message = st.encode_to_vec();
        assert_eq!(body[0], 0, "not compressed");
        assert_eq!(&body[1..5], &(message.len() as u32).to_be_bytes());
        assert_eq!(&body[5..], &message[..]);
    }
}
