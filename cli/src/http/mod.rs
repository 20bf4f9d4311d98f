//! The read side over HTTP (`docket serve --http ADDR`): Prometheus
//! metrics, the C2SP tlog-tiles read API, and a web explorer whose pages
//! verify what they show in the browser.
//!
//! Every route is `GET` (axum answers `HEAD` too; any other method is 405):
//! there is no write endpoint and no debug endpoint.
//!
//! | path | what | module |
//! | --- | --- | --- |
//! | `/metrics` | Prometheus text format | [`metrics`] |
//! | `/checkpoint` | the signed checkpoint note (C2SP signed-note) | here |
//! | `/tile/<L>/<N>[.p/<W>]`, `/tile/entries/<N>[.p/<W>]` | tlog-tiles hash tiles and entry bundles | [`tiles`] |
//! | `/api/...` | JSON for the explorer | [`api`] |
//! | `/`, `/ui/...` | the explorer (static files built into the binary) | [`assets`] |
//!
//! With a read token configured (`--read-token`), everything but the
//! explorer's static files needs `Authorization: Bearer <token>`, as the
//! gRPC reads do. The listener is plain HTTP/1.1: keep it on loopback or
//! behind a TLS proxy (browsers offer WebCrypto only to `https://` pages and
//! to `http://localhost`/`127.0.0.1`).

pub mod api;
pub mod assets;
pub mod metrics;
pub mod procfs;
pub mod tiles;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use docket_domain::domain::Docket;
use tokio::sync::watch;

use api::{ApiError, blocking};
use metrics::HttpMetrics;

/// `Cache-Control` of full tiles and full entry bundles: they never change.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// `Cache-Control` of partial tiles (they may be replaced by the full tile).
pub const SHORT_LIVED: &str = "public, max-age=5";
/// `Cache-Control` of the checkpoint (it moves with every commit).
pub const CHECKPOINT_CACHE: &str = "no-cache";

/// What every handler shares.
#[derive(Debug)]
pub struct AppState {
    pub docket: Docket,
    pub metrics: Arc<HttpMetrics>,
    /// Reads need `Authorization: Bearer <token>` when set.
    pub read_token: Option<String>,
}

/// The HTTP routes over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/ui/{file}", get(assets::file))
        .route("/metrics", get(metrics_text))
        .route("/checkpoint", get(checkpoint))
        .route("/tile/{*rest}", get(tile))
        .route("/api/head", get(api::head))
        .route("/api/events", get(api::events))
        .route("/api/event/{seq}", get(api::event))
        .route("/api/proof/{seq}", get(api::proof))
        .route("/api/tasks", get(api::tasks))
        .route("/api/task/{id}", get(api::task))
        .route("/api/evidence/{oid}", get(api::evidence))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            read_token_check,
        ))
        .layer(middleware::map_response(security_headers))
        .with_state(state)
}

/// Binds `addr` and serves the routes until `stop` turns true. Returns the
/// bound address (the real port when `addr` has port 0).
pub async fn spawn(
    addr: SocketAddr,
    docket: Docket,
    read_token: Option<String>,
    mut stop: watch::Receiver<bool>,
) -> Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (--http)"))?;
    let bound = listener.local_addr()?;
    let metrics = HttpMetrics::new(docket.ledger());
    let state = Arc::new(AppState {
        docket,
        metrics: Arc::clone(&metrics),
        read_token,
    });
    // Counts the kinds of new events after each commit, so the counters
    // move without a scrape; ends with the server.
    let mut stop_counting = stop.clone();
    tokio::spawn(async move {
        let stopped = async move {
            let _ = stop_counting.wait_for(|s| *s).await;
        };
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                () = metrics.committed() => {
                    let m = Arc::clone(&metrics);
                    let _ = tokio::task::spawn_blocking(move || m.catch_up()).await;
                }
                () = &mut stopped => break,
            }
        }
    });
    let app = router(state);
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await;
        if let Err(e) = served {
            tracing::error!("the HTTP server stopped: {e}");
        }
    });
    tracing::info!(addr = %bound, "docket HTTP read side started");
    Ok(bound)
}

/// Adds the headers every answer carries: a strict content security policy
/// (the explorer loads only its own files and talks only to this origin),
/// no MIME sniffing, no referrer, no framing.
async fn security_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

/// Whether `path` is one of the explorer's static files (served without the
/// read token: they hold no ledger data).
fn is_static(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

/// Equal-length comparison that does not stop at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses reads without the read token, when one is configured.
async fn read_token_check(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(token) = &s.read_token
        && !is_static(req.uri().path())
    {
        let ok = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| constant_time_eq(t.as_bytes(), token.as_bytes()));
        if !ok {
            let mut r = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "reads need `Authorization: Bearer <token>` on this server",
            )
            .into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    next.run(req).await
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "not found\n",
    )
        .into_response()
}

/// A plain-text answer with a status (for the tlog and metrics paths).
fn text_error(e: ApiError) -> Response {
    let mut r = (
        e.status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{}\n", e.message),
    )
        .into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Headers shared by the public log paths: anyone may fetch them from any
/// origin (they are the log's public data).
fn public_headers(content_type: &'static str, cache: &'static str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h
}

/// `GET /metrics`.
async fn metrics_text(State(s): State<Arc<AppState>>) -> Response {
    let m = Arc::clone(&s.metrics);
    match blocking(move || {
        m.render().map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("encoding metrics: {e}"),
            )
        })
    })
    .await
    {
        Ok(text) => {
            let mut h = HeaderMap::new();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(metrics::CONTENT_TYPE),
            );
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            (h, text).into_response()
        }
        Err(e) => text_error(e),
    }
}

/// `GET /checkpoint`: the signed checkpoint note of the current tree.
async fn checkpoint(State(s): State<Arc<AppState>>) -> Response {
    let docket = s.docket.clone();
    let note = blocking(move || {
        docket
            .ledger()
            .checkpoint()?
            .map(|(_, note)| note)
            .ok_or_else(|| ApiError::not_found("a checkpoint (the log is empty)"))
    })
    .await;
    match note {
        Ok(note) => (
            public_headers("text/plain; charset=utf-8", CHECKPOINT_CACHE),
            note,
        )
            .into_response(),
        Err(e) => text_error(e),
    }
}

/// `GET /tile/...`: a hash tile or an entry bundle.
async fn tile(State(s): State<Arc<AppState>>, Path(rest): Path<String>) -> Response {
    let Some(t) = tiles::parse(&rest) else {
        return text_error(ApiError::not_found(format!(
            "/tile/{rest} (tiles are /tile/<L>/<N>[.p/<W>] and /tile/entries/<N>[.p/<W>], \
             N in x-prefixed groups of three digits)"
        )));
    };
    let docket = s.docket.clone();
    let bytes = blocking(move || {
        let ledger = docket.ledger();
        let size = ledger.len();
        if !tiles::exists(&t, size) {
            return Err(ApiError::not_found(format!(
                "/{} (the tree has {size} leaves)",
                tiles::tile_path(&t)
            )));
        }
        Ok(match t.level {
            Some(_) => tiles::hash_tile(ledger, &t)?,
            None => tiles::entry_bundle(ledger, &t)?,
        })
    })
    .await;
    match bytes {
        Ok(bytes) => {
            let cache = if t.is_full() { IMMUTABLE } else { SHORT_LIVED };
            (public_headers("application/octet-stream", cache), bytes).into_response()
        }
        Err(e) => text_error(e),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;

    /// `GET path` over HTTP/1.0 (with the read token, if any): the status
    /// and the body.
    fn http_get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n{auth}\r\n").unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let status = String::from_utf8_lossy(&raw[..12])
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        (status, raw[split + 4..].to_vec())
    }

    fn status_of(addr: SocketAddr, path: &str, token: Option<&str>) -> u16 {
        http_get(addr, path, token).0
    }

    fn fetch(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
        http_get(addr, path, None)
    }

    #[test]
    fn the_read_token_guards_everything_but_the_explorer_files() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (docket, _) = Docket::init(
            &dir.path().join("ledger"),
            None,
            docket_domain::domain::DocketOptions::default(),
        )
        .unwrap();
        let (stop_tx, stop_rx) = watch::channel(false);
        let addr = rt
            .block_on(spawn(
                "127.0.0.1:0".parse().unwrap(),
                docket.clone(),
                Some("s3cret".into()),
                stop_rx,
            ))
            .unwrap();
        for path in ["/checkpoint", "/tile/0/000.p/1", "/metrics", "/api/head"] {
            assert_eq!(status_of(addr, path, None), 401, "{path}");
            assert_eq!(status_of(addr, path, Some("wrong")), 401, "{path}");
            assert_eq!(status_of(addr, path, Some("s3cret")), 200, "{path}");
        }
        assert_eq!(status_of(addr, "/", None), 200);
        assert_eq!(status_of(addr, "/ui/app.js", None), 200);
        assert_eq!(status_of(addr, "/ui/nope.js", None), 404);
        stop_tx.send(true).unwrap();
        rt.shutdown_timeout(std::time::Duration::from_secs(5));
        docket.close().unwrap();
    }

    #[test]
    fn a_tile_or_bundle_is_served_only_once_proved_against_the_signed_checkpoint() {
        use docket_domain::{LedgerOptions, Statement, keys};
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("ledger");
        // Given a tile ledger longer than the open's tail (4,096 events),
        let options = LedgerOptions {
            layout: docket_log::Layout::Tiles,
            ..LedgerOptions::default()
        };
        let (ledger, info) = docket_domain::ledger::init_with(&data, None, options).unwrap();
        let admin = keys::read_key_file(&info.admin_key_path).unwrap();
        for chunk in (0..4_700).collect::<Vec<u32>>().chunks(500) {
            let batch = chunk
                .iter()
                .map(|i| Statement::sign("x-note", format!("{{\"n\":{i}}}").into_bytes(), &admin))
                .collect();
            for r in ledger.append_many(batch).unwrap() {
                r.unwrap();
            }
        }
        ledger.close().unwrap();
        drop(ledger);
        let tile = data.join("tiles/tile/0/000");
        let intact = std::fs::read(&tile).unwrap();
        let serve = |data: &std::path::Path, check: &dyn Fn(SocketAddr)| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            // (No background check: only the HTTP read meets the damage.)
            let ledger_options = LedgerOptions {
                background_scrub: false,
                ..LedgerOptions::default()
            };
            let docket = Docket::open(
                data,
                ledger_options,
                docket_domain::domain::DocketOptions::default(),
            )
            .unwrap();
            let (stop_tx, stop_rx) = watch::channel(false);
            let addr = rt
                .block_on(spawn(
                    "127.0.0.1:0".parse().unwrap(),
                    docket.clone(),
                    None,
                    stop_rx,
                ))
                .unwrap();
            check(addr);
            stop_tx.send(true).unwrap();
            rt.shutdown_timeout(std::time::Duration::from_secs(5));
            docket.close().unwrap();
        };
        // with one hash of its first level-0 tile (which the open does not
        // read) flipped, when that tile is fetched, then the tile served is
        // the intact one, rebuilt from the event bytes before it is served,
        let mut damaged = intact.clone();
        damaged[32 * 9] ^= 1;
        std::fs::write(&tile, &damaged).unwrap();
        let served_intact = |addr: SocketAddr, path: &str, bytes: &[u8]| {
            let (status, body) = fetch(addr, path);
            assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
            assert!(
                body == bytes,
                "{path}: the bytes served are not the intact ones"
            );
        };
        serve(&data, &|addr| {
            served_intact(addr, "/tile/0/000", &intact);
            served_intact(addr, "/tile/0/000.p/12", &intact[..12 * 32]);
            assert_eq!(fetch(addr, "/tile/entries/000").0, 200);
        });
        assert_eq!(std::fs::read(&tile).unwrap(), intact);
        // and with an event of the first bundle altered, the bundle is
        // refused naming the events (the intact tile still serves).
        let (bundle, offset, len) = docket_log::tiles::TileStore::locate_entry(&data, 20).unwrap();
        let mut bytes = std::fs::read(&bundle).unwrap();
        bytes[offset as usize + len - 40] ^= 1;
        std::fs::write(&bundle, bytes).unwrap();
        serve(&data, &|addr| {
            let (status, body) = fetch(addr, "/tile/entries/000");
            let body = String::from_utf8_lossy(&body).to_string();
            assert_eq!(status, 500, "{body}");
            assert!(body.contains("events 0..256"), "{body}");
            assert_eq!(
                fetch(addr, "/tile/entries/000.p/20").0,
                200,
                "before the damage"
            );
            served_intact(addr, "/tile/0/000", &intact);
        });
    }
}
