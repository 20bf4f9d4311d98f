//! The web explorer's static files, built into the binary from `cli/web/`
//! (plain HTML, JavaScript modules and CSS: no build step, no CDN, nothing
//! fetched from the network at run time).
//!
//! * `index.html`: the page shell;
//! * `app.js`: pages (head, events, task, event, evidence, bundle viewer)
//!   and routing on the URL fragment (`#/task/<id>`, `#/event/<seq>`, …);
//! * `verify.js`: what the browser checks itself with WebCrypto — signed
//!   notes and verifier keys, event decoding and author signatures, RFC 9162
//!   inclusion and consistency proofs, tar parsing and the bundle audit;
//! * `style.css`.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// (name, content type, bytes) of every file under `/ui/`.
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../web/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../web/app.js"),
    ),
    (
        "verify.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../web/verify.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../web/style.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../../web/favicon.svg"),
    ),
];

fn serve(name: &str) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, bytes)) => {
            let mut r = ([(header::CONTENT_TYPE, *content_type)], bytes.to_vec()).into_response();
            // Revalidated on each load: a new binary serves new files.
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "not found\n",
        )
            .into_response(),
    }
}

/// `GET /`.
pub async fn index() -> Response {
    serve("index.html")
}

/// `GET /ui/<file>`.
pub async fn file(Path(name): Path<String>) -> Response {
    serve(&name)
}
