//! A server that the background scrub stopped (fail-stop on damage found
//! in events older than what the open re-reads) exits 5 at SIGTERM and,
//! like a healthy server, forgets `DATA/server/address`: no process serves
//! that address any more (campaign 21b, finding 6: the file was left).

mod support;

use std::time::{Duration, Instant};
use support::{At, Server, append_empty, append_lines, text};

#[test]
fn given_a_server_stopped_by_damage_when_terminated_then_it_exits_5_and_forgets_its_address() {
    let (_root, data) = support::init_ledger();
    // Given 6,000 events (the open re-reads the last 4,096; the scrub
    // reads the rest in the background),
    let out = append_lines(
        At::Data(&data),
        &data.join("keys/admin.key"),
        "x-note",
        (0..6_000).map(|i| format!("{{\"n\":{i}}}")),
    );
    assert!(out.status.success(), "{}", text(&out));
    // and a flipped byte in the third entry bundle (events 512..767),
    let bundle = data.join("tiles/tile/entries/002");
    let mut bytes = std::fs::read(&bundle).unwrap();
    bytes[5_000] ^= 0x01;
    std::fs::write(&bundle, &bytes).unwrap();
    // when it is served, the scrub finds the damage and the ledger stops:
    // appends answer exit 5,
    let server = Server::start(&data);
    assert!(data.join("server/address").exists());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = append_empty(At::Server(&server.url), &data.join("keys/admin.key"));
        if out.status.code() == Some(5) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the scrub never stopped the ledger: {}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // then SIGTERM ends it with exit 5, and its address is forgotten.
    let status = server.terminate();
    assert_eq!(status.code(), Some(5), "{status:?}");
    assert!(
        !data.join("server/address").exists(),
        "a stopped server's address stays recorded"
    );
}
