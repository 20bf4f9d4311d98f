//! `docket log append --stdin` through a server keeps 256 unary appends in
//! flight on one HTTP/2 connection, so that they share group commits. A
//! group commit answers them in one burst of small responses, which the
//! client's HTTP/2 library must accept unread: with the adaptive window the
//! client used to open (64 KiB), h2 closed the connection after about 180
//! of them (GOAWAY `too_many_data_frames`), and the command reported
//! appended statements as failed, exit 2, in about half of the runs of 600
//! lines (campaign 21a, finding 1). A status the client's own transport
//! made is a network failure (exit 10), never a server's refusal.

mod support;

use support::{At, Server, append_lines, checkpoint_size, text};

#[test]
fn given_a_server_when_thousands_of_lines_are_appended_pipelined_then_every_one_is_acknowledged_once()
 {
    let (_root, data) = support::init_ledger();
    let server = Server::start(&data);
    let at = At::Server(&server.url);
    let before = checkpoint_size(at);
    // Several runs: each used to fail about half the time at 600 lines.
    let (runs, lines) = (3, 2_000);
    for run in 0..runs {
        let out = append_lines(
            at,
            &data.join("keys/admin.key"),
            "x-burst",
            (0..lines).map(|i| format!("{{\"run\":{run},\"line\":{i}}}")),
        );
        assert_eq!(out.status.code(), Some(0), "run {run}: {}", text(&out));
        let receipts: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(receipts.len(), lines, "run {run}: one receipt per line");
        assert!(
            receipts
                .iter()
                .all(|r| r.get("error").is_none() && r["duplicate"] == false),
            "run {run}: every line appended once: {:?}",
            receipts.iter().find(|r| r.get("error").is_some())
        );
    }
    assert_eq!(checkpoint_size(at), before + (runs * lines) as u64);
}
