//! `docket-powerfs`: an in-memory FUSE file system for power-loss tests.
//!
//! Mount it, run a program on it, then [`Handle::cut_power`]: from that
//! instant every operation fails with `EIO`, and the returned [`Image`] holds
//! only what a real disk would be guaranteed to hold after losing power:
//!
//! * a file's bytes (and size and mode) as of its last `fsync`/`fdatasync`
//!   (a write through an `O_SYNC`/`O_DSYNC` descriptor counts as write +
//!   fsync of the file);
//! * a directory's entries as of its last `fsync`. Creating, renaming or
//!   unlinking a name is lost unless the directory holding it was synced
//!   afterwards, each directory on its own: a rename synced only at its
//!   destination leaves the file under both names, synced only at its source
//!   under neither; a new file whose directory was never synced is gone even
//!   if the file itself was synced.
//!
//! [`Image::write_to`] materialises that tree in a real directory, where the
//! program can be restarted to check that it recovers.
//! [`Handle::cut_power_keep_some_unsynced`] is a milder cut: for every inode
//! a random prefix of its unsynced operations reached the disk, as a kernel
//! writing back in order might leave it.
//!
//! What it is not: a model of any real file system's extra guarantees (ext4
//! commits a new file's directory entry with the file's fsync, for example;
//! this model does not, which is what POSIX promises), of torn sectors
//! within one write request (a request is all or nothing, but the kernel
//! splits large writes into requests of at most 1 MiB, which are separate),
//! of `mmap` (files are opened with direct I/O, so shared mappings fail),
//! of symlinks, hard links, special files or extended attributes (refused),
//! or of `syncfs`/`sync` (the kernel does not forward them to FUSE; a
//! program that relies on them loses data here). It keeps everything in
//! memory, never frees an inode, and caps a file at 4 GiB: it is for short
//! tests. Mounting needs `/dev/fuse` and the right to call `mount(2)` (root);
//! no libfuse or `fusermount` is used.

mod fs;
mod image;
mod model;

use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fuser::{BackgroundSession, Config, MountOption};

pub use crate::image::{Image, Node};
pub use crate::model::Stats;
use crate::model::{Model, Owner};

/// The power-loss file system. See the crate documentation.
#[derive(Debug)]
pub struct PowerFs;

impl PowerFs {
    /// Mounts an empty file system on `mountpoint` (an existing directory)
    /// and serves it from a background thread of this process until
    /// [`Handle::unmount`] or the handle is dropped. The root directory is
    /// owned like `mountpoint` and starts durable and empty.
    ///
    /// Fails with `PermissionDenied` or `NotFound` where FUSE mounts are not
    /// possible (no `/dev/fuse`, not root).
    pub fn mount(mountpoint: impl AsRef<Path>) -> io::Result<Handle> {
        let mountpoint = mountpoint.as_ref().canonicalize()?;
        let meta = std::fs::metadata(&mountpoint)?;
        let model = Arc::new(Mutex::new(Model::new(Owner {
            uid: meta.uid(),
            gid: meta.gid(),
        })));
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("docket-powerfs".into()),
            MountOption::DefaultPermissions,
            MountOption::NoAtime,
        ];
        let session =
            fuser::spawn_mount(fs::Adapter::new(Arc::clone(&model)), &mountpoint, &config)?;
        Ok(Handle {
            model,
            session: Some(session),
            mountpoint,
        })
    }
}

/// A mounted [`PowerFs`]. Dropping it unmounts (lazily if still busy).
pub struct Handle {
    model: Arc<Mutex<Model>>,
    session: Option<BackgroundSession>,
    mountpoint: PathBuf,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("mountpoint", &self.mountpoint)
            .field("mounted", &self.session.is_some())
            .finish_non_exhaustive()
    }
}

impl Handle {
    fn model(&self) -> MutexGuard<'_, Model> {
        // Every model operation is applied whole or not at all, so a panic
        // elsewhere while holding the lock leaves nothing half done.
        self.model.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The (canonical) mount point.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Cuts the power: atomically with respect to every file system
    /// operation, freezes the file system (every later operation fails with
    /// `EIO`; closing still succeeds) and returns the durable state.
    pub fn cut_power(&self) -> Image {
        self.model().freeze()
    }

    /// Like [`Handle::cut_power`], but for each file and directory a random
    /// prefix (chosen from `seed`) of its operations since its last sync
    /// survives too.
    pub fn cut_power_keep_some_unsynced(&self, seed: u64) -> Image {
        self.model().freeze_keep_some(seed)
    }

    /// Like [`Handle::cut_power`], but every unsynced write to the files
    /// called `name` (in any directory) survives, and nothing else does: the
    /// disk wrote those files first, which it may.
    pub fn cut_power_keeping_unsynced_of(&self, name: &str) -> Image {
        self.model().freeze_keeping(std::ffi::OsStr::new(name))
    }

    /// The image a cut would leave now, without cutting.
    pub fn durable_image(&self) -> Image {
        self.model().durable_image()
    }

    /// Makes everything durable, as if every file and directory had been
    /// synced: for setting up a known durable starting point.
    pub fn sync_all(&self) {
        self.model().sync_all();
    }

    /// Whether the power has been cut.
    pub fn is_cut(&self) -> bool {
        self.model().is_frozen()
    }

    /// What reached the file system so far.
    pub fn stats(&self) -> Stats {
        self.model().stats()
    }

    /// Unmounts and waits for the serving thread. If something still uses
    /// the mount, it is detached lazily instead and an error says so.
    pub fn unmount(mut self) -> io::Result<()> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> io::Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        match nix::mount::umount(&self.mountpoint) {
            Ok(()) => match session.join() {
                // The unmount succeeded and tore the connection down while
                // the session still had a request in flight: the session is
                // over all the same (seen once in 120 power-loss trials;
                // the image, frozen before, is unaffected).
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ECONNABORTED as i32) => {
                    Ok(())
                }
                ended => ended,
            },
            Err(nix::errno::Errno::EBUSY) => {
                nix::mount::umount2(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH)?;
                // The serving thread ends when the last user lets go.
                drop(session);
                Err(io::Error::other(format!(
                    "{} was busy; detached lazily",
                    self.mountpoint.display()
                )))
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Best effort: an unmount failure must not hide the test's own panic.
        let _ = self.unmount_inner();
    }
}
