//! The FUSE side: every request locks the model, applies one operation and
//! replies. Entries and attributes are never cached by the kernel (TTL 0)
//! and files are opened with `FOPEN_DIRECT_IO`, so every read and write
//! reaches the model and nothing sits in the page cache. Locks (`flock`,
//! `fcntl`) are left to the kernel: fuser does not ask for
//! `FUSE_POSIX_LOCKS` or `FUSE_FLOCK_LOCKS`, so the kernel grants them
//! locally on the mount.

use std::ffi::OsStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BsdFileFlags, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::model::{Model, Owner, SetAttr};

/// Nothing is cached by the kernel.
const TTL: Duration = Duration::ZERO;

/// Inode numbers are never reused.
const GENERATION: Generation = Generation(0);

/// The file system handed to fuser; the [`crate::Handle`] shares the model.
pub(crate) struct Adapter {
    model: Arc<Mutex<Model>>,
}

impl Adapter {
    pub(crate) fn new(model: Arc<Mutex<Model>>) -> Self {
        Self { model }
    }

    fn model(&self) -> MutexGuard<'_, Model> {
        // A panic while holding the lock leaves the model consistent enough
        // for a test harness: every operation is applied or not.
        self.model.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn owner(req: &Request) -> Owner {
    Owner {
        uid: req.uid(),
        gid: req.gid(),
    }
}

fn perm(mode: u32, umask: u32) -> u16 {
    // The mask keeps the permission bits, which fit in u16.
    u16::try_from(mode & !umask & 0o7777).unwrap_or(0o600)
}

fn time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}

fn entry(reply: ReplyEntry, res: Result<FileAttr, Errno>) {
    match res {
        Ok(attr) => reply.entry(&TTL, &attr, GENERATION),
        Err(e) => reply.error(e),
    }
}

fn empty(reply: ReplyEmpty, res: Result<(), Errno>) {
    match res {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

impl Filesystem for Adapter {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        entry(reply, self.model().lookup(parent.0, name));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.model().getattr(ino.0) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let set = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime: atime.map(time),
            mtime: mtime.map(time),
        };
        match self.model().setattr(ino.0, set) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            // Only regular files and directories exist here.
            reply.error(Errno::EPERM);
            return;
        }
        let res = self
            .model()
            .create_file(parent.0, name, perm(mode, umask), owner(req));
        entry(reply, res);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let res = self
            .model()
            .mkdir(parent.0, name, perm(mode, umask), owner(req));
        entry(reply, res);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.model().unlink(parent.0, name));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.model().rmdir(parent.0, name));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let res = self
            .model()
            .rename(parent.0, name, newparent.0, newname, flags);
        empty(reply, res);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.model().open(ino.0, flags.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut model = self.model();
        let res = model
            .create_file(parent.0, name, perm(mode, umask), owner(req))
            .and_then(|attr| Ok((attr, model.open(attr.ino.0, flags & !libc::O_TRUNC)?)));
        match res {
            Ok((attr, fh)) => reply.created(
                &TTL,
                &attr,
                GENERATION,
                FileHandle(fh),
                FopenFlags::FOPEN_DIRECT_IO,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.model().read(ino.0, offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // O_SYNC includes the O_DSYNC bit.
        let sync = flags.0 & libc::O_DSYNC != 0;
        match self.model().write(ino.0, fh.0, offset, data, sync) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close() makes nothing durable.
        if self.model().is_frozen() {
            reply.error(Errno::EIO);
        } else {
            reply.ok();
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.model().release(fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.model().fsync(ino.0));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.model().opendir(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match self.model().readdir(fh.0, offset) {
            Ok(entries) => {
                for (ino, next, kind, name) in entries {
                    if reply.add(INodeNo(ino), next, kind, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.model().releasedir(fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.model().fsync(ino.0));
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Plenty of room: 64 GiB in 4 KiB blocks, a million inodes.
        const BLOCKS: u64 = 16 << 20;
        reply.statfs(BLOCKS, BLOCKS, BLOCKS, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        empty(reply, self.model().access(ino.0));
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.model().fallocate(ino.0, offset, length, mode));
    }
}
