//! The model through a real FUSE mount, with plain `std::fs`: what the
//! kernel forwards (writes, fsync, directory fsync, renames) and what a cut
//! leaves. Skips (loudly) where FUSE mounts are impossible.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use docket_powerfs::{Handle, PowerFs};

/// Mounts on `dir/mnt`, or says why not and returns `None`.
fn mount(dir: &Path) -> Option<Handle> {
    let mnt = dir.join("mnt");
    fs::create_dir(&mnt).expect("mountpoint");
    match PowerFs::mount(&mnt) {
        Ok(h) => Some(h),
        Err(e) if matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::NotFound) => {
            eprintln!("SKIPPED: cannot mount FUSE here: {e}");
            None
        }
        Err(e) => panic!("mount failed: {e}"),
    }
}

fn sync_dir(path: &Path) {
    File::open(path)
        .expect("open dir")
        .sync_all()
        .expect("fsync dir");
}

#[test]
fn write_without_fsync_is_lost_and_with_fsync_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    let mut f = File::create(m.join("f")).unwrap();
    sync_dir(&m);
    f.write_all(b"durable").unwrap();
    f.sync_data().unwrap();
    f.write_all(b" lost").unwrap();
    assert_eq!(fs::read(m.join("f")).unwrap(), b"durable lost");
    let stats = h.stats();
    assert_eq!(stats.fsyncs, 1, "{stats:?}");
    assert_eq!(stats.fsyncdirs, 1, "{stats:?}");
    let img = h.cut_power();
    assert_eq!(img.file("f"), Some(&b"durable"[..]));
    drop(f);
    h.unmount().unwrap();
}

#[test]
fn synced_file_in_unsynced_directory_is_absent() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    fs::create_dir(m.join("d")).unwrap();
    sync_dir(&m);
    let mut f = File::create(m.join("d/f")).unwrap();
    f.write_all(b"x").unwrap();
    f.sync_all().unwrap();
    let img = h.durable_image();
    assert!(img.get("d").is_some());
    assert!(img.get("d/f").is_none(), "{}", img.listing());
    sync_dir(&m.join("d"));
    assert_eq!(h.durable_image().file("d/f"), Some(&b"x"[..]));
    drop(f);
    h.unmount().unwrap();
}

#[test]
fn rename_without_directory_fsync_keeps_the_old_name() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    fs::write(m.join("conf"), b"old").unwrap();
    File::open(m.join("conf")).unwrap().sync_all().unwrap();
    let mut t = File::create(m.join("conf.tmp")).unwrap();
    t.write_all(b"new").unwrap();
    t.sync_all().unwrap();
    sync_dir(&m);
    fs::rename(m.join("conf.tmp"), m.join("conf")).unwrap();
    assert_eq!(fs::read(m.join("conf")).unwrap(), b"new");
    let img = h.durable_image();
    assert_eq!(img.file("conf"), Some(&b"old"[..]));
    assert_eq!(img.file("conf.tmp"), Some(&b"new"[..]));
    sync_dir(&m);
    let img = h.cut_power();
    assert_eq!(img.file("conf"), Some(&b"new"[..]));
    assert!(img.get("conf.tmp").is_none());
    drop(t);
    h.unmount().unwrap();
}

#[test]
fn unlink_and_truncate_without_fsync_are_undone() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    fs::write(m.join("a"), b"0123456789").unwrap();
    fs::write(m.join("b"), b"bbb").unwrap();
    h.sync_all();
    fs::remove_file(m.join("b")).unwrap();
    OpenOptions::new()
        .write(true)
        .open(m.join("a"))
        .unwrap()
        .set_len(2)
        .unwrap();
    assert_eq!(fs::read(m.join("a")).unwrap(), b"01");
    let img = h.cut_power();
    assert_eq!(img.file("a"), Some(&b"0123456789"[..]));
    assert_eq!(img.file("b"), Some(&b"bbb"[..]));
    h.unmount().unwrap();
}

#[test]
fn large_writes_reads_appends_and_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut f = File::create(m.join("big")).unwrap();
    f.write_all(&big).unwrap();
    f.sync_all().unwrap();
    assert_eq!(fs::read(m.join("big")).unwrap(), big);
    f.seek(SeekFrom::Start(10)).unwrap();
    f.write_all(b"XY").unwrap();
    let mut back = [0u8; 4];
    let mut r = File::open(m.join("big")).unwrap();
    r.seek(SeekFrom::Start(9)).unwrap();
    r.read_exact(&mut back).unwrap();
    assert_eq!(&back, &[big[9], b'X', b'Y', big[12]]);
    let mut a = OpenOptions::new().append(true).open(m.join("big")).unwrap();
    a.write_all(b"tail").unwrap();
    assert_eq!(fs::metadata(m.join("big")).unwrap().len(), 3_000_004);
    fs::create_dir_all(m.join("x/y")).unwrap();
    let mut names: Vec<_> = fs::read_dir(&m)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["big", "x"]);
    // The root was never synced: nothing survives.
    let img = h.cut_power();
    assert!(img.get("big").is_none(), "{}", img.listing());
    drop((f, r, a));
    h.unmount().unwrap();
}

#[test]
fn o_dsync_writes_are_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(libc::O_DSYNC)
        .open(m.join("s"))
        .unwrap();
    sync_dir(&m);
    f.write_all(b"now").unwrap();
    assert!(h.stats().sync_writes >= 1, "{:?}", h.stats());
    assert_eq!(h.cut_power().file("s"), Some(&b"now"[..]));
    drop(f);
    h.unmount().unwrap();
}

#[test]
fn after_the_cut_everything_fails_with_eio() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    let mut f = File::create(m.join("f")).unwrap();
    let _ = h.cut_power();
    let eio = |e: std::io::Error| assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    eio(f.write_all(b"x").unwrap_err());
    eio(f.sync_all().unwrap_err());
    eio(File::create(m.join("g")).unwrap_err());
    eio(fs::metadata(m.join("f")).unwrap_err());
    assert!(h.stats().refused_after_cut >= 4);
    drop(f);
    h.unmount().unwrap();
}

#[test]
fn flock_is_exclusive_across_descriptors() {
    use nix::fcntl::{Flock, FlockArg};
    let tmp = tempfile::tempdir().unwrap();
    let Some(h) = mount(tmp.path()) else { return };
    let m = h.mountpoint().to_path_buf();
    let a = File::create(m.join("lock")).unwrap();
    let b = File::open(m.join("lock")).unwrap();
    let held = Flock::lock(a, FlockArg::LockExclusiveNonblock).expect("first lock");
    let (b, err) = Flock::lock(b, FlockArg::LockExclusiveNonblock).expect_err("second lock");
    assert_eq!(err, nix::errno::Errno::EWOULDBLOCK);
    let a = held.unlock().expect("unlock");
    let held = Flock::lock(b, FlockArg::LockExclusiveNonblock).expect("lock after unlock");
    drop((a, held));
    h.unmount().unwrap();
}
