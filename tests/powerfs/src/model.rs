//! The file system model, without FUSE: inodes, the current state every
//! operation sees, the durable state a power cut leaves, and the pending
//! operations between the two.
//!
//! Rules (the whole point of the crate):
//!
//! * A file's `durable` bytes change only on `fsync`/`fdatasync` of that file
//!   (both count as a full sync here) or on a write through an
//!   `O_SYNC`/`O_DSYNC` descriptor (treated as write + fsync of that file).
//! * A directory's `durable` entries change only on `fsync` of that
//!   directory. A rename touches two directories; each side becomes durable
//!   when its own directory is synced, so a rename synced on one side only
//!   leaves the file under both names or under neither.
//! * A new inode starts with empty durable content and its creation mode; it
//!   is found after a cut only through durable entries.
//! * After [`Model::freeze`] every operation fails with `EIO` (the device is
//!   gone), except closing handles.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

use fuser::{Errno, FileAttr, FileType, INodeNo, RenameFlags};

use crate::image::{Image, Node};

/// Inode number.
pub(crate) type Ino = u64;

/// The root directory's inode number (FUSE's `FUSE_ROOT_ID`).
pub(crate) const ROOT: Ino = 1;

/// Largest file size the model accepts (content lives in memory).
pub(crate) const MAX_FILE_SIZE: u64 = 4 << 30;

/// Counters of what reached the file system; tests use them to prove that
/// fsync requests arrive at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `write` requests.
    pub writes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// `fsync`/`fdatasync` requests on files.
    pub fsyncs: u64,
    /// `fsync` requests on directories.
    pub fsyncdirs: u64,
    /// Writes through an `O_SYNC`/`O_DSYNC` descriptor.
    pub sync_writes: u64,
    /// Requests refused with `EIO` because the power had been cut.
    pub refused_after_cut: u64,
}

/// Attributes a caller may change with `setattr`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<SystemTime>,
    pub mtime: Option<SystemTime>,
}

/// Who creates an inode.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owner {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Clone, Debug)]
enum FileOp {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Clone, Debug)]
enum DirOp {
    Insert(OsString, Ino),
    Remove(OsString),
}

#[derive(Debug, Default)]
struct FileBody {
    current: Vec<u8>,
    durable: Vec<u8>,
    /// Operations on `current` since the last sync, oldest first.
    pending: Vec<FileOp>,
}

#[derive(Debug)]
struct DirBody {
    current: BTreeMap<OsString, Ino>,
    durable: BTreeMap<OsString, Ino>,
    /// Operations on `current` since the last sync, oldest first.
    pending: Vec<DirOp>,
    /// Parent in the current tree (for `..`).
    parent: Ino,
}

#[derive(Debug)]
enum Body {
    File(FileBody),
    Dir(DirBody),
}

#[derive(Debug)]
struct Inode {
    perm: u16,
    durable_perm: u16,
    uid: u32,
    gid: u32,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
    /// Current directory entries naming this inode.
    links: u32,
    body: Body,
}

impl Inode {
    fn new(body: Body, perm: u16, owner: Owner) -> Self {
        let now = SystemTime::now();
        Self {
            perm,
            durable_perm: perm,
            uid: owner.uid,
            gid: owner.gid,
            atime: now,
            mtime: now,
            ctime: now,
            links: 0,
            body,
        }
    }

    fn kind(&self) -> FileType {
        match self.body {
            Body::File(_) => FileType::RegularFile,
            Body::Dir(_) => FileType::Directory,
        }
    }

    fn attr(&self, ino: Ino) -> FileAttr {
        let (size, nlink) = match &self.body {
            Body::File(f) => (f.current.len() as u64, self.links),
            Body::Dir(d) => (d.current.len() as u64, 2),
        };
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
            crtime: self.ctime,
            kind: self.kind(),
            perm: self.perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// Makes the current state durable.
    /// Invariant: `durable` with every `pending` operation applied in order
    /// is `current`, so applying them costs what was written since the last
    /// sync, not the file's size.
    fn sync(&mut self) {
        self.durable_perm = self.perm;
        match &mut self.body {
            Body::File(f) => {
                for op in f.pending.drain(..) {
                    apply_file_op(&mut f.durable, &op);
                }
            }
            Body::Dir(d) => {
                for op in d.pending.drain(..) {
                    apply_dir_op(&mut d.durable, &op);
                }
            }
        }
    }
}

/// An open file.
#[derive(Debug)]
struct OpenFile {
    ino: Ino,
    append: bool,
}

/// An open directory: the entries as they were at `opendir`, so that
/// `readdir` offsets stay stable while the directory changes.
#[derive(Debug)]
struct OpenDir {
    entries: Vec<(Ino, FileType, OsString)>,
}

/// Chooses how many pending operations of one inode (reached under `name`)
/// survive a cut.
trait Survivors {
    fn keep(&mut self, name: &OsStr, pending: usize) -> usize;
}

/// Nothing unsynced survives.
struct KeepNone;
impl Survivors for KeepNone {
    fn keep(&mut self, _name: &OsStr, _pending: usize) -> usize {
        0
    }
}

/// Every unsynced operation of the files called `.0` survives, nothing
/// else: as if the disk had written those files first.
struct KeepNamed<'a>(&'a OsStr);
impl Survivors for KeepNamed<'_> {
    fn keep(&mut self, name: &OsStr, pending: usize) -> usize {
        if name == self.0 { pending } else { 0 }
    }
}

/// A random prefix of each inode's unsynced operations survives.
struct KeepRandomPrefix(u64);
impl Survivors for KeepRandomPrefix {
    fn keep(&mut self, _name: &OsStr, pending: usize) -> usize {
        self.pick(pending)
    }
}

impl KeepRandomPrefix {
    /// A pseudo-random number in `0..=pending`.
    fn pick(&mut self, pending: usize) -> usize {
        // xorshift64; the seed is forced odd so the state never sticks at 0.
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let choices = pending as u64 + 1;
        // The remainder is at most `pending`, which came from a usize.
        usize::try_from(self.0 % choices).unwrap_or(pending)
    }
}

/// The whole file system.
#[derive(Debug)]
pub(crate) struct Model {
    inodes: HashMap<Ino, Inode>,
    next_ino: Ino,
    files: HashMap<u64, OpenFile>,
    dirs: HashMap<u64, OpenDir>,
    next_fh: u64,
    frozen: bool,
    stats: Stats,
}

type Res<T> = Result<T, Errno>;

fn grow_to(buf: &mut Vec<u8>, len: u64) -> Res<()> {
    let len = usize::try_from(len).map_err(|_| Errno::EFBIG)?;
    if buf.len() < len {
        buf.resize(len, 0);
    }
    Ok(())
}

fn apply_file_op(buf: &mut Vec<u8>, op: &FileOp) {
    // Every op was applied to `current` first, so its sizes are in range.
    match op {
        FileOp::Write { offset, data } => {
            let start = usize::try_from(*offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(data.len());
            if buf.len() < end {
                buf.resize(end, 0);
            }
            buf[start..end].copy_from_slice(data);
        }
        FileOp::SetLen(len) => buf.resize(usize::try_from(*len).unwrap_or(usize::MAX), 0),
    }
}

fn apply_dir_op(entries: &mut BTreeMap<OsString, Ino>, op: &DirOp) {
    match op {
        DirOp::Insert(name, ino) => {
            entries.insert(name.clone(), *ino);
        }
        DirOp::Remove(name) => {
            entries.remove(name);
        }
    }
}

impl Model {
    /// An empty file system: a root directory (durable, with no entries)
    /// owned by `owner`.
    pub(crate) fn new(owner: Owner) -> Self {
        let root = Inode::new(
            Body::Dir(DirBody {
                current: BTreeMap::new(),
                durable: BTreeMap::new(),
                pending: Vec::new(),
                parent: ROOT,
            }),
            0o755,
            owner,
        );
        Self {
            inodes: HashMap::from([(ROOT, root)]),
            next_ino: ROOT + 1,
            files: HashMap::new(),
            dirs: HashMap::new(),
            next_fh: 1,
            frozen: false,
            stats: Stats::default(),
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        self.stats
    }

    pub(crate) fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Fails with `EIO` once the power is cut.
    fn live(&mut self) -> Res<()> {
        if self.frozen {
            self.stats.refused_after_cut += 1;
            Err(Errno::EIO)
        } else {
            Ok(())
        }
    }

    fn inode(&self, ino: Ino) -> Res<&Inode> {
        self.inodes.get(&ino).ok_or(Errno::ENOENT)
    }

    fn inode_mut(&mut self, ino: Ino) -> Res<&mut Inode> {
        self.inodes.get_mut(&ino).ok_or(Errno::ENOENT)
    }

    fn dir(&self, ino: Ino) -> Res<&DirBody> {
        match &self.inode(ino)?.body {
            Body::Dir(d) => Ok(d),
            Body::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> Res<&mut DirBody> {
        match &mut self.inode_mut(ino)?.body {
            Body::Dir(d) => Ok(d),
            Body::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn file_mut(&mut self, ino: Ino) -> Res<&mut FileBody> {
        match &mut self.inode_mut(ino)?.body {
            Body::File(f) => Ok(f),
            Body::Dir(_) => Err(Errno::EISDIR),
        }
    }

    fn child(&self, parent: Ino, name: &OsStr) -> Res<Option<Ino>> {
        Ok(self.dir(parent)?.current.get(name).copied())
    }

    /// Adds `name → ino` to `parent`'s current entries (replacing any
    /// entry of that name).
    fn link(&mut self, parent: Ino, name: &OsStr, ino: Ino) -> Res<()> {
        let dir = self.dir_mut(parent)?;
        let old = dir.current.insert(name.to_owned(), ino);
        dir.pending.push(DirOp::Insert(name.to_owned(), ino));
        if let Some(old) = old {
            self.dropped_link(old);
        }
        self.inode_mut(ino)?.links += 1;
        self.touch_dir(parent);
        Ok(())
    }

    /// Removes `name` from `parent`'s current entries.
    fn unlink_entry(&mut self, parent: Ino, name: &OsStr) -> Res<Ino> {
        let dir = self.dir_mut(parent)?;
        let ino = dir.current.remove(name).ok_or(Errno::ENOENT)?;
        dir.pending.push(DirOp::Remove(name.to_owned()));
        self.dropped_link(ino);
        self.touch_dir(parent);
        Ok(ino)
    }

    fn dropped_link(&mut self, ino: Ino) {
        // Inodes are never removed from the table: a durable entry may still
        // name an inode whose current entries are all gone.
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.links = inode.links.saturating_sub(1);
            inode.ctime = SystemTime::now();
        }
    }

    fn touch_dir(&mut self, ino: Ino) {
        if let Some(inode) = self.inodes.get_mut(&ino) {
            let now = SystemTime::now();
            inode.mtime = now;
            inode.ctime = now;
        }
    }

    pub(crate) fn lookup(&mut self, parent: Ino, name: &OsStr) -> Res<FileAttr> {
        self.live()?;
        let ino = self.child(parent, name)?.ok_or(Errno::ENOENT)?;
        self.getattr(ino)
    }

    pub(crate) fn getattr(&mut self, ino: Ino) -> Res<FileAttr> {
        self.live()?;
        Ok(self.inode(ino)?.attr(ino))
    }

    pub(crate) fn setattr(&mut self, ino: Ino, set: SetAttr) -> Res<FileAttr> {
        self.live()?;
        if let Some(size) = set.size {
            if size > MAX_FILE_SIZE {
                return Err(Errno::EFBIG);
            }
            let file = self.file_mut(ino)?;
            let len = usize::try_from(size).map_err(|_| Errno::EFBIG)?;
            file.current.resize(len, 0);
            file.pending.push(FileOp::SetLen(size));
        }
        let inode = self.inode_mut(ino)?;
        let now = SystemTime::now();
        if let Some(mode) = set.mode {
            // The mask keeps the permission bits, which fit in u16.
            inode.perm = u16::try_from(mode & 0o7777).unwrap_or(0o644);
        }
        if let Some(uid) = set.uid {
            inode.uid = uid;
        }
        if let Some(gid) = set.gid {
            inode.gid = gid;
        }
        if let Some(t) = set.atime {
            inode.atime = t;
        }
        if let Some(t) = set.mtime {
            inode.mtime = t;
        } else if set.size.is_some() {
            inode.mtime = now;
        }
        inode.ctime = now;
        Ok(inode.attr(ino))
    }

    fn new_inode(
        &mut self,
        parent: Ino,
        name: &OsStr,
        body: Body,
        perm: u16,
        owner: Owner,
    ) -> Res<Ino> {
        self.live()?;
        if self.child(parent, name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(ino, Inode::new(body, perm, owner));
        self.link(parent, name, ino)?;
        Ok(ino)
    }

    pub(crate) fn create_file(
        &mut self,
        parent: Ino,
        name: &OsStr,
        perm: u16,
        owner: Owner,
    ) -> Res<FileAttr> {
        let ino = self.new_inode(parent, name, Body::File(FileBody::default()), perm, owner)?;
        self.getattr(ino)
    }

    pub(crate) fn mkdir(
        &mut self,
        parent: Ino,
        name: &OsStr,
        perm: u16,
        owner: Owner,
    ) -> Res<FileAttr> {
        let body = Body::Dir(DirBody {
            current: BTreeMap::new(),
            durable: BTreeMap::new(),
            pending: Vec::new(),
            parent,
        });
        let ino = self.new_inode(parent, name, body, perm, owner)?;
        self.getattr(ino)
    }

    pub(crate) fn unlink(&mut self, parent: Ino, name: &OsStr) -> Res<()> {
        self.live()?;
        let ino = self.child(parent, name)?.ok_or(Errno::ENOENT)?;
        if matches!(self.inode(ino)?.body, Body::Dir(_)) {
            return Err(Errno::EISDIR);
        }
        self.unlink_entry(parent, name).map(drop)
    }

    pub(crate) fn rmdir(&mut self, parent: Ino, name: &OsStr) -> Res<()> {
        self.live()?;
        let ino = self.child(parent, name)?.ok_or(Errno::ENOENT)?;
        if !self.dir(ino)?.current.is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        self.unlink_entry(parent, name).map(drop)
    }

    pub(crate) fn rename(
        &mut self,
        parent: Ino,
        name: &OsStr,
        new_parent: Ino,
        new_name: &OsStr,
        flags: RenameFlags,
    ) -> Res<()> {
        self.live()?;
        let src = self.child(parent, name)?.ok_or(Errno::ENOENT)?;
        let dst = self.child(new_parent, new_name)?;
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            let dst = dst.ok_or(Errno::ENOENT)?;
            self.link(parent, name, dst)?;
            self.link(new_parent, new_name, src)?;
            self.reparent(src, new_parent);
            self.reparent(dst, parent);
            return Ok(());
        }
        if flags.contains(RenameFlags::RENAME_NOREPLACE) && dst.is_some() {
            return Err(Errno::EEXIST);
        }
        if !(flags - RenameFlags::RENAME_NOREPLACE).is_empty() {
            return Err(Errno::EINVAL);
        }
        if dst == Some(src) {
            return Ok(());
        }
        let src_is_dir = matches!(self.inode(src)?.body, Body::Dir(_));
        if let Some(dst) = dst {
            match (&self.inode(dst)?.body, src_is_dir) {
                (Body::Dir(d), true) if !d.current.is_empty() => return Err(Errno::ENOTEMPTY),
                (Body::Dir(_), false) => return Err(Errno::EISDIR),
                (Body::File(_), true) => return Err(Errno::ENOTDIR),
                _ => {}
            }
        }
        self.unlink_entry(parent, name)?;
        self.link(new_parent, new_name, src)?;
        self.reparent(src, new_parent);
        Ok(())
    }

    fn reparent(&mut self, ino: Ino, parent: Ino) {
        if let Ok(dir) = self.dir_mut(ino) {
            dir.parent = parent;
        }
    }

    pub(crate) fn open(&mut self, ino: Ino, flags: i32) -> Res<u64> {
        self.live()?;
        if flags & libc::O_TRUNC != 0 && flags & libc::O_ACCMODE != libc::O_RDONLY {
            self.setattr(
                ino,
                SetAttr {
                    size: Some(0),
                    ..SetAttr::default()
                },
            )?;
        }
        if let Body::Dir(_) = self.inode(ino)?.body
            && flags & libc::O_ACCMODE != libc::O_RDONLY
        {
            return Err(Errno::EISDIR);
        }
        let fh = self.next_fh;
        self.next_fh += 1;
        self.files.insert(
            fh,
            OpenFile {
                ino,
                append: flags & libc::O_APPEND != 0,
            },
        );
        Ok(fh)
    }

    /// Closing never fails, not even after a cut.
    pub(crate) fn release(&mut self, fh: u64) {
        self.files.remove(&fh);
    }

    pub(crate) fn read(&mut self, ino: Ino, offset: u64, size: u32) -> Res<Vec<u8>> {
        self.live()?;
        let file = self.file_mut(ino)?;
        let len = file.current.len();
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(len);
        let end = start.saturating_add(size as usize).min(len);
        Ok(file.current[start..end].to_vec())
    }

    /// Writes `data` at `offset` (at the end for an `O_APPEND` handle);
    /// `sync` makes the file durable afterwards (`O_SYNC`/`O_DSYNC`).
    pub(crate) fn write(
        &mut self,
        ino: Ino,
        fh: u64,
        offset: u64,
        data: &[u8],
        sync: bool,
    ) -> Res<u32> {
        self.live()?;
        let append = self
            .files
            .get(&fh)
            .is_some_and(|f| f.append && f.ino == ino);
        let count = u32::try_from(data.len()).map_err(|_| Errno::EINVAL)?;
        let file = self.file_mut(ino)?;
        let offset = if append {
            file.current.len() as u64
        } else {
            offset
        };
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let op = FileOp::Write {
            offset,
            data: data.to_vec(),
        };
        grow_to(&mut file.current, end)?;
        apply_file_op(&mut file.current, &op);
        file.pending.push(op);
        let inode = self.inode_mut(ino)?;
        let now = SystemTime::now();
        inode.mtime = now;
        inode.ctime = now;
        if sync {
            inode.sync();
            self.stats.sync_writes += 1;
        }
        self.stats.writes += 1;
        self.stats.bytes_written += data.len() as u64;
        Ok(count)
    }

    /// `fallocate`: plain allocation extends the size; `KEEP_SIZE` changes
    /// nothing visible; punching a hole or zeroing a range writes zeros.
    pub(crate) fn fallocate(&mut self, ino: Ino, offset: u64, length: u64, mode: i32) -> Res<()> {
        self.live()?;
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let keep_size = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        let zero = mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0;
        if mode
            & !(libc::FALLOC_FL_KEEP_SIZE | libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE)
            != 0
        {
            return Err(Errno::EOPNOTSUPP);
        }
        let file = self.file_mut(ino)?;
        let len = file.current.len() as u64;
        if zero {
            let zero_end = if keep_size { end.min(len) } else { end };
            if zero_end > offset {
                let op = FileOp::Write {
                    offset,
                    data: vec![0; usize::try_from(zero_end - offset).map_err(|_| Errno::EFBIG)?],
                };
                grow_to(&mut file.current, zero_end)?;
                apply_file_op(&mut file.current, &op);
                file.pending.push(op);
            }
        } else if !keep_size && end > len {
            grow_to(&mut file.current, end)?;
            file.pending.push(FileOp::SetLen(end));
        }
        Ok(())
    }

    /// `fsync` of a file or a directory.
    pub(crate) fn fsync(&mut self, ino: Ino) -> Res<()> {
        self.live()?;
        let inode = self.inode_mut(ino)?;
        let is_dir = matches!(inode.body, Body::Dir(_));
        inode.sync();
        if is_dir {
            self.stats.fsyncdirs += 1;
        } else {
            self.stats.fsyncs += 1;
        }
        Ok(())
    }

    pub(crate) fn access(&mut self, ino: Ino) -> Res<()> {
        self.live()?;
        self.inode(ino).map(drop)
    }

    pub(crate) fn opendir(&mut self, ino: Ino) -> Res<u64> {
        self.live()?;
        let dir = self.dir(ino)?;
        let mut entries = vec![
            (ino, FileType::Directory, OsString::from(".")),
            (dir.parent, FileType::Directory, OsString::from("..")),
        ];
        for (name, child) in &dir.current {
            let kind = self.inode(*child)?.kind();
            entries.push((*child, kind, name.clone()));
        }
        let fh = self.next_fh;
        self.next_fh += 1;
        self.dirs.insert(fh, OpenDir { entries });
        Ok(fh)
    }

    /// Entries from index `offset` of the listing taken at `opendir`, each
    /// with the offset of the entry after it.
    pub(crate) fn readdir(
        &mut self,
        fh: u64,
        offset: u64,
    ) -> Res<Vec<(Ino, u64, FileType, OsString)>> {
        self.live()?;
        let dir = self.dirs.get(&fh).ok_or(Errno::EBADF)?;
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        Ok(dir
            .entries
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, (ino, kind, name))| (*ino, i as u64 + 1, *kind, name.clone()))
            .collect())
    }

    pub(crate) fn releasedir(&mut self, fh: u64) {
        self.dirs.remove(&fh);
    }

    /// Like a `sync(2)` that also syncs every directory: everything current
    /// becomes durable.
    pub(crate) fn sync_all(&mut self) {
        for inode in self.inodes.values_mut() {
            inode.sync();
        }
    }

    /// Cuts the power: every later operation fails with `EIO`. Returns what
    /// a reboot would find.
    pub(crate) fn freeze(&mut self) -> Image {
        self.frozen = true;
        self.image_with(&mut KeepNone)
    }

    /// Like [`Model::freeze`], but for each inode a random prefix (from
    /// `seed`) of its unsynced operations reached the disk anyway.
    pub(crate) fn freeze_keep_some(&mut self, seed: u64) -> Image {
        self.frozen = true;
        self.image_with(&mut KeepRandomPrefix(seed | 1))
    }

    /// Like [`Model::freeze`], but every unsynced operation of the files
    /// called `name` (in any directory) reached the disk anyway.
    pub(crate) fn freeze_keeping(&mut self, name: &OsStr) -> Image {
        self.frozen = true;
        self.image_with(&mut KeepNamed(name))
    }

    /// What a reboot would find if the power were cut now (nothing frozen).
    pub(crate) fn durable_image(&self) -> Image {
        self.image_with(&mut KeepNone)
    }

    fn image_with(&self, keep: &mut dyn Survivors) -> Image {
        // One decision per inode, so an inode reached twice looks the same.
        let mut decided: HashMap<Ino, usize> = HashMap::new();
        let mut visited = HashSet::from([ROOT]);
        let entries = self.image_dir(ROOT, OsStr::new(""), keep, &mut decided, &mut visited);
        Image::new(entries)
    }

    fn image_dir(
        &self,
        ino: Ino,
        name: &OsStr,
        keep: &mut dyn Survivors,
        decided: &mut HashMap<Ino, usize>,
        visited: &mut HashSet<Ino>,
    ) -> BTreeMap<OsString, Node> {
        let Some(Inode {
            body: Body::Dir(dir),
            ..
        }) = self.inodes.get(&ino)
        else {
            return BTreeMap::new();
        };
        let k = *decided
            .entry(ino)
            .or_insert_with(|| keep.keep(name, dir.pending.len()));
        let mut entries = dir.durable.clone();
        for op in &dir.pending[..k] {
            apply_dir_op(&mut entries, op);
        }
        let mut out = BTreeMap::new();
        for (name, child) in entries {
            let Some(inode) = self.inodes.get(&child) else {
                continue;
            };
            let mode = u32::from(inode.durable_perm);
            match &inode.body {
                Body::File(file) => {
                    let k = *decided
                        .entry(child)
                        .or_insert_with(|| keep.keep(&name, file.pending.len()));
                    let mut data = file.durable.clone();
                    for op in &file.pending[..k] {
                        apply_file_op(&mut data, op);
                    }
                    out.insert(name, Node::File { data, mode });
                }
                Body::Dir(_) => {
                    // A directory reachable twice (a rename synced on both
                    // sides separately) is materialised once.
                    if visited.insert(child) {
                        let entries = self.image_dir(child, &name, keep, decided, visited);
                        out.insert(name, Node::Dir { entries, mode });
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Owner = Owner { uid: 0, gid: 0 };

    fn n(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    fn ino(attr: FileAttr) -> Ino {
        attr.ino.0
    }

    fn write_all(m: &mut Model, ino: Ino, offset: u64, data: &[u8]) {
        let fh = m.open(ino, libc::O_RDWR).expect("open");
        m.write(ino, fh, offset, data, false).expect("write");
        m.release(fh);
    }

    #[test]
    fn unsynced_write_is_lost() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        m.fsync(ROOT).unwrap();
        write_all(&mut m, f, 0, b"hello");
        assert_eq!(m.durable_image().file("f"), Some(&b""[..]));
        m.fsync(f).unwrap();
        assert_eq!(m.durable_image().file("f"), Some(&b"hello"[..]));
        write_all(&mut m, f, 5, b" world");
        let img = m.freeze();
        assert_eq!(img.file("f"), Some(&b"hello"[..]));
    }

    #[test]
    fn synced_file_in_unsynced_directory_is_absent() {
        let mut m = Model::new(ME);
        let d = ino(m.mkdir(ROOT, n("d"), 0o755, ME).unwrap());
        m.fsync(ROOT).unwrap();
        let f = ino(m.create_file(d, n("f"), 0o600, ME).unwrap());
        write_all(&mut m, f, 0, b"x");
        m.fsync(f).unwrap();
        let img = m.durable_image();
        assert!(img.get("d").is_some());
        assert!(img.get("d/f").is_none());
        m.fsync(d).unwrap();
        assert_eq!(m.durable_image().file("d/f"), Some(&b"x"[..]));
    }

    #[test]
    fn new_directory_needs_its_parent_synced() {
        let mut m = Model::new(ME);
        let d = ino(m.mkdir(ROOT, n("d"), 0o755, ME).unwrap());
        let f = ino(m.create_file(d, n("f"), 0o644, ME).unwrap());
        m.fsync(f).unwrap();
        m.fsync(d).unwrap();
        assert!(m.durable_image().get("d").is_none());
        m.fsync(ROOT).unwrap();
        assert_eq!(m.durable_image().file("d/f"), Some(&b""[..]));
    }

    #[test]
    fn rename_without_directory_sync_keeps_old_name() {
        let mut m = Model::new(ME);
        let tmp = ino(m.create_file(ROOT, n("tmp"), 0o644, ME).unwrap());
        write_all(&mut m, tmp, 0, b"new");
        m.fsync(tmp).unwrap();
        m.fsync(ROOT).unwrap();
        m.rename(ROOT, n("tmp"), ROOT, n("final"), RenameFlags::empty())
            .unwrap();
        let img = m.durable_image();
        assert_eq!(img.file("tmp"), Some(&b"new"[..]));
        assert!(img.get("final").is_none());
        m.fsync(ROOT).unwrap();
        let img = m.durable_image();
        assert!(img.get("tmp").is_none());
        assert_eq!(img.file("final"), Some(&b"new"[..]));
    }

    #[test]
    fn replacing_rename_keeps_old_content_until_directory_sync() {
        let mut m = Model::new(ME);
        let old = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        write_all(&mut m, old, 0, b"old");
        m.fsync(old).unwrap();
        m.fsync(ROOT).unwrap();
        let new = ino(m.create_file(ROOT, n("f.tmp"), 0o644, ME).unwrap());
        write_all(&mut m, new, 0, b"new");
        m.fsync(new).unwrap();
        m.rename(ROOT, n("f.tmp"), ROOT, n("f"), RenameFlags::empty())
            .unwrap();
        assert_eq!(m.read(new, 0, 10).unwrap(), b"new");
        assert_eq!(m.durable_image().file("f"), Some(&b"old"[..]));
        m.fsync(ROOT).unwrap();
        assert_eq!(m.durable_image().file("f"), Some(&b"new"[..]));
    }

    #[test]
    fn rename_across_directories_is_durable_per_side() {
        let mut m = Model::new(ME);
        let a = ino(m.mkdir(ROOT, n("a"), 0o755, ME).unwrap());
        let b = ino(m.mkdir(ROOT, n("b"), 0o755, ME).unwrap());
        let f = ino(m.create_file(a, n("f"), 0o644, ME).unwrap());
        write_all(&mut m, f, 0, b"data");
        m.fsync(f).unwrap();
        m.fsync(a).unwrap();
        m.fsync(b).unwrap();
        m.fsync(ROOT).unwrap();
        m.rename(a, n("f"), b, n("g"), RenameFlags::empty())
            .unwrap();
        // Only the destination synced: both names.
        m.fsync(b).unwrap();
        let img = m.durable_image();
        assert_eq!(img.file("a/f"), Some(&b"data"[..]));
        assert_eq!(img.file("b/g"), Some(&b"data"[..]));
        // Only the source synced (undo by a fresh model): neither name.
        let mut m = Model::new(ME);
        let a = ino(m.mkdir(ROOT, n("a"), 0o755, ME).unwrap());
        let b = ino(m.mkdir(ROOT, n("b"), 0o755, ME).unwrap());
        let f = ino(m.create_file(a, n("f"), 0o644, ME).unwrap());
        m.fsync(f).unwrap();
        m.fsync(a).unwrap();
        m.fsync(b).unwrap();
        m.fsync(ROOT).unwrap();
        m.rename(a, n("f"), b, n("g"), RenameFlags::empty())
            .unwrap();
        m.fsync(a).unwrap();
        let img = m.durable_image();
        assert!(img.get("a/f").is_none());
        assert!(img.get("b/g").is_none());
    }

    #[test]
    fn unlink_without_directory_sync_resurrects() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        write_all(&mut m, f, 0, b"keep");
        m.sync_all();
        m.unlink(ROOT, n("f")).unwrap();
        assert!(m.lookup(ROOT, n("f")).is_err());
        assert_eq!(m.durable_image().file("f"), Some(&b"keep"[..]));
        m.fsync(ROOT).unwrap();
        assert!(m.durable_image().get("f").is_none());
    }

    #[test]
    fn truncate_is_lost_without_fsync() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        write_all(&mut m, f, 0, b"0123456789");
        m.sync_all();
        m.setattr(
            f,
            SetAttr {
                size: Some(3),
                ..SetAttr::default()
            },
        )
        .unwrap();
        assert_eq!(m.getattr(f).unwrap().size, 3);
        assert_eq!(m.durable_image().file("f"), Some(&b"0123456789"[..]));
        m.fsync(f).unwrap();
        assert_eq!(m.durable_image().file("f"), Some(&b"012"[..]));
    }

    #[test]
    fn sync_write_is_durable_at_once() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        m.fsync(ROOT).unwrap();
        let fh = m.open(f, libc::O_WRONLY | libc::O_DSYNC).unwrap();
        m.write(f, fh, 0, b"now", true).unwrap();
        assert_eq!(m.durable_image().file("f"), Some(&b"now"[..]));
        assert_eq!(m.stats().sync_writes, 1);
    }

    #[test]
    fn append_handle_writes_at_end() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        write_all(&mut m, f, 0, b"ab");
        let fh = m.open(f, libc::O_WRONLY | libc::O_APPEND).unwrap();
        m.write(f, fh, 0, b"cd", false).unwrap();
        assert_eq!(m.read(f, 0, 100).unwrap(), b"abcd");
    }

    #[test]
    fn frozen_refuses_everything_but_close() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        let fh = m.open(f, libc::O_RDWR).unwrap();
        m.sync_all();
        let img = m.freeze();
        assert_eq!(img.file("f"), Some(&b""[..]));
        assert_eq!(m.write(f, fh, 0, b"x", false), Err(Errno::EIO));
        assert_eq!(m.fsync(f), Err(Errno::EIO));
        assert_eq!(m.getattr(f).err(), Some(Errno::EIO));
        assert!(m.create_file(ROOT, n("g"), 0o644, ME).is_err());
        m.release(fh);
        assert_eq!(m.stats().refused_after_cut, 4);
        // What was captured does not change.
        assert_eq!(m.durable_image().file("f"), Some(&b""[..]));
    }

    #[test]
    fn rmdir_and_rename_errors() {
        let mut m = Model::new(ME);
        let d = ino(m.mkdir(ROOT, n("d"), 0o755, ME).unwrap());
        m.create_file(d, n("f"), 0o644, ME).unwrap();
        m.create_file(ROOT, n("g"), 0o644, ME).unwrap();
        assert_eq!(m.rmdir(ROOT, n("d")), Err(Errno::ENOTEMPTY));
        assert_eq!(m.unlink(ROOT, n("d")), Err(Errno::EISDIR));
        assert_eq!(
            m.rename(ROOT, n("g"), ROOT, n("d"), RenameFlags::empty()),
            Err(Errno::EISDIR)
        );
        assert_eq!(
            m.rename(ROOT, n("d"), ROOT, n("g"), RenameFlags::empty()),
            Err(Errno::ENOTDIR)
        );
        assert_eq!(
            m.rename(ROOT, n("g"), d, n("f"), RenameFlags::RENAME_NOREPLACE),
            Err(Errno::EEXIST)
        );
        m.rename(ROOT, n("g"), d, n("f"), RenameFlags::RENAME_EXCHANGE)
            .unwrap();
        m.unlink(d, n("f")).unwrap();
        m.unlink(ROOT, n("g")).unwrap();
        m.rmdir(ROOT, n("d")).unwrap();
        assert!(m.lookup(ROOT, n("d")).is_err());
    }

    #[test]
    fn readdir_lists_snapshot_at_opendir() {
        let mut m = Model::new(ME);
        m.create_file(ROOT, n("a"), 0o644, ME).unwrap();
        let fh = m.opendir(ROOT).unwrap();
        m.create_file(ROOT, n("b"), 0o644, ME).unwrap();
        let names: Vec<_> = m.readdir(fh, 0).unwrap().into_iter().map(|e| e.3).collect();
        assert_eq!(names, [".", "..", "a"]);
        let rest = m.readdir(fh, 2).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].1, 3);
        m.releasedir(fh);
    }

    #[test]
    fn fallocate_modes() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
        write_all(&mut m, f, 0, b"abcdef");
        m.fallocate(f, 0, 10, 0).unwrap();
        assert_eq!(m.getattr(f).unwrap().size, 10);
        m.fallocate(f, 0, 100, libc::FALLOC_FL_KEEP_SIZE).unwrap();
        assert_eq!(m.getattr(f).unwrap().size, 10);
        m.fallocate(
            f,
            1,
            2,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
        )
        .unwrap();
        assert_eq!(&m.read(f, 0, 4).unwrap(), b"a\0\0d");
        assert_eq!(m.fallocate(f, 0, 1, 0x40), Err(Errno::EOPNOTSUPP));
    }

    #[test]
    fn keep_some_keeps_prefixes_only() {
        for seed in 0..64 {
            let mut m = Model::new(ME);
            let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
            m.sync_all();
            for (i, chunk) in [b"aa", b"bb", b"cc", b"dd"].iter().enumerate() {
                write_all(&mut m, f, 2 * i as u64, &chunk[..]);
            }
            let img = m.freeze_keep_some(seed);
            let data = img.file("f").expect("the entry was synced");
            assert!(
                b"aabbccdd".starts_with(data) && data.len().is_multiple_of(2),
                "seed {seed}: {data:?}"
            );
        }
    }

    #[test]
    fn keeping_a_named_file_keeps_its_unsynced_writes_and_nothing_else() {
        let mut m = Model::new(ME);
        let a = ino(m.create_file(ROOT, n("anchor"), 0o644, ME).unwrap());
        let b = ino(m.create_file(ROOT, n("commits"), 0o644, ME).unwrap());
        m.sync_all();
        write_all(&mut m, a, 0, b"slot");
        write_all(&mut m, b, 0, b"record");
        let img = m.freeze_keeping(n("anchor"));
        assert_eq!(img.file("anchor"), Some(&b"slot"[..]));
        assert_eq!(img.file("commits"), Some(&b""[..]));
    }

    #[test]
    fn sync_by_replaying_pending_matches_current() {
        let mut rng = KeepRandomPrefix(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let mut m = Model::new(ME);
            let f = ino(m.create_file(ROOT, n("f"), 0o644, ME).unwrap());
            let fh = m.open(f, libc::O_RDWR).unwrap();
            for step in 0..30u8 {
                match rng.pick(5) {
                    0 | 1 => {
                        let off = rng.pick(64) as u64;
                        let len = rng.pick(16) + 1;
                        m.write(f, fh, off, &vec![step; len], false).unwrap();
                    }
                    2 => {
                        let size = Some(rng.pick(80) as u64);
                        m.setattr(
                            f,
                            SetAttr {
                                size,
                                ..SetAttr::default()
                            },
                        )
                        .unwrap();
                    }
                    3 => {
                        let (off, len) = (rng.pick(64) as u64, rng.pick(32) as u64 + 1);
                        m.fallocate(
                            f,
                            off,
                            len,
                            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        )
                        .unwrap();
                    }
                    _ => m.fsync(f).unwrap(),
                }
            }
            m.fsync(f).unwrap();
            m.fsync(ROOT).unwrap();
            let current = m.read(f, 0, u32::MAX).unwrap();
            assert_eq!(m.durable_image().file("f"), Some(&current[..]));
        }
    }

    #[test]
    fn permissions_are_durable_with_the_inode() {
        let mut m = Model::new(ME);
        let f = ino(m.create_file(ROOT, n("k"), 0o600, ME).unwrap());
        m.sync_all();
        m.setattr(
            f,
            SetAttr {
                mode: Some(0o644),
                ..SetAttr::default()
            },
        )
        .unwrap();
        let img = m.durable_image();
        assert!(matches!(img.get("k"), Some(Node::File { mode: 0o600, .. })));
    }
}
