//! Mounts powerfs on a directory until a line is read from stdin, then cuts
//! the power, prints the durable listing and the counters, and unmounts:
//! for poking at the file system by hand.
//!
//! `cargo run -p docket-powerfs --example mount -- /tmp/mnt`

use std::io::BufRead as _;

use docket_powerfs::PowerFs;

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: mount DIR");
        std::process::exit(2);
    };
    let handle = PowerFs::mount(&dir)?;
    eprintln!(
        "mounted on {}; press Enter to cut the power",
        handle.mountpoint().display()
    );
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let image = handle.cut_power();
    print!("{}", image.listing());
    eprintln!("{:?}", handle.stats());
    handle.unmount()
}
