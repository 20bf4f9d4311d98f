//! Bundle containers: a directory or one tar file, written atomically and
//! read without ever following a link out of the bundle.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use super::ExportError;

/// One entry found in a bundle container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Path relative to the bundle root, `/`-separated, as stored.
    pub path: String,
    pub kind: EntryKind,
}

/// What a container entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A symbolic or hard link (never followed: it may point outside).
    Link,
    /// Anything else (device, fifo, non-UTF-8 name).
    Other,
}

/// A bundle opened for reading.
#[derive(Debug)]
pub enum BundleReader {
    /// A directory bundle.
    Dir(PathBuf),
    /// A tar bundle, read into memory (regular files only).
    Tar {
        path: PathBuf,
        files: BTreeMap<String, Vec<u8>>,
        listed: Vec<Listed>,
    },
}

impl BundleReader {
    /// Opens a directory or tar bundle. `Err` only when `path` cannot be read
    /// at all (missing, unreadable, not a tar archive).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let meta = fs::metadata(path)?;
        if meta.is_dir() {
            return Ok(Self::Dir(path.to_path_buf()));
        }
        let file = fs::File::open(path)?;
        let mut archive = tar::Archive::new(file);
        let mut files = BTreeMap::new();
        let mut listed = Vec::new();
        for entry in archive.entries()? {
            let mut entry = entry?;
            let raw = entry.path_bytes().into_owned();
            let Ok(name) = String::from_utf8(raw) else {
                listed.push(Listed {
                    path: String::from_utf8_lossy(&entry.path_bytes()).into_owned(),
                    kind: EntryKind::Other,
                });
                continue;
            };
            let name = name.strip_prefix("./").unwrap_or(&name).to_string();
            let ty = entry.header().entry_type();
            let kind = if ty.is_file() {
                EntryKind::File
            } else if ty.is_dir() {
                continue;
            } else if ty.is_symlink() || ty.is_hard_link() {
                EntryKind::Link
            } else {
                EntryKind::Other
            };
            if kind == EntryKind::File {
                let mut bytes =
                    Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0).min(1 << 30));
                entry.read_to_end(&mut bytes)?;
                files.insert(name.clone(), bytes);
            }
            listed.push(Listed { path: name, kind });
        }
        Ok(Self::Tar {
            path: path.to_path_buf(),
            files,
            listed,
        })
    }

    /// Where the bundle is.
    pub fn location(&self) -> &Path {
        match self {
            Self::Dir(p) | Self::Tar { path: p, .. } => p,
        }
    }

    /// Every entry (files, links, others; directories omitted), sorted.
    pub fn list(&self) -> std::io::Result<Vec<Listed>> {
        match self {
            Self::Dir(root) => {
                let mut out = Vec::new();
                walk(root, "", &mut out)?;
                out.sort_by(|a, b| a.path.cmp(&b.path));
                Ok(out)
            }
            Self::Tar { listed, .. } => {
                let mut v = listed.clone();
                v.sort_by(|a, b| a.path.cmp(&b.path));
                Ok(v)
            }
        }
    }

    /// The bytes of a regular file inside the bundle; None when absent or
    /// not a regular file. Links are never followed.
    pub fn read(&self, rel: &str) -> std::io::Result<Option<Vec<u8>>> {
        match self {
            Self::Dir(root) => {
                let path = root.join(rel);
                match fs::symlink_metadata(&path) {
                    Ok(m) if m.file_type().is_file() => fs::read(&path).map(Some),
                    Ok(_) => Ok(None),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Self::Tar { files, .. } => Ok(files.get(rel).cloned()),
        }
    }

    /// Reads a reference that points outside the bundle (only with
    /// `--allow-external-ref`): a local path, absolute or relative to the
    /// bundle's directory. URLs are never fetched (the audit is offline):
    /// None.
    pub fn read_external(&self, reference: &str) -> std::io::Result<Option<Vec<u8>>> {
        if reference.contains("://") {
            return Ok(None);
        }
        let base = match self {
            Self::Dir(root) => root.clone(),
            Self::Tar { path, .. } => path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let path = base.join(reference);
        match fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn walk(root: &Path, prefix: &str, out: &mut Vec<Listed>) -> std::io::Result<()> {
    let dir = if prefix.is_empty() {
        root.to_path_buf()
    } else {
        root.join(prefix)
    };
    for entry in fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            out.push(Listed {
                path: format!("{prefix}{}", name.to_string_lossy()),
                kind: EntryKind::Other,
            });
            continue;
        };
        let rel = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}/{name}")
        };
        let ft = entry.file_type()?;
        if ft.is_dir() {
            walk(root, &rel, out)?;
        } else if ft.is_file() {
            out.push(Listed {
                path: rel,
                kind: EntryKind::File,
            });
        } else if ft.is_symlink() {
            out.push(Listed {
                path: rel,
                kind: EntryKind::Link,
            });
        } else {
            out.push(Listed {
                path: rel,
                kind: EntryKind::Other,
            });
        }
    }
    Ok(())
}

/// Writes `files` as a directory bundle at `out` (which must not exist):
/// into a sibling temp directory, each file fsynced, then renamed into
/// place, so a crash never leaves a half-written bundle under `out`.
pub fn write_dir(out: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), ExportError> {
    if fs::symlink_metadata(out).is_ok() {
        return Err(ExportError::Exists(out.to_path_buf()));
    }
    let tmp = temp_sibling(out);
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| ExportError::io(&tmp, e))?;
    for (rel, bytes) in files {
        let path = tmp.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| ExportError::io(parent, e))?;
        }
        let mut f = fs::File::create(&path).map_err(|e| ExportError::io(&path, e))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| ExportError::io(&path, e))?;
    }
    for dir in [tmp.join("blobs"), tmp.join("attestations"), tmp.clone()] {
        if dir.exists() {
            crate::store::sync_dir(&dir)?;
        }
    }
    fs::rename(&tmp, out).map_err(|e| ExportError::io(out, e))?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::store::sync_dir(parent)?;
    }
    Ok(())
}

/// Writes `files` as one deterministic tar (ustar, sorted, mtime 0, mode
/// 0644, uid/gid 0) at `out`, which must not exist.
pub fn write_tar(out: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), ExportError> {
    if fs::symlink_metadata(out).is_ok() {
        return Err(ExportError::Exists(out.to_path_buf()));
    }
    let bytes = tar_bytes(files).map_err(|e| ExportError::io(out, e))?;
    let tmp = temp_sibling(out);
    let mut f = fs::File::create(&tmp).map_err(|e| ExportError::io(&tmp, e))?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| ExportError::io(&tmp, e))?;
    fs::rename(&tmp, out).map_err(|e| ExportError::io(out, e))?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::store::sync_dir(parent)?;
    }
    Ok(())
}

/// The deterministic tar image of `files`.
pub fn tar_bytes(files: &BTreeMap<String, Vec<u8>>) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for (rel, bytes) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, rel, bytes.as_slice())?;
    }
    builder.into_inner()
}

fn temp_sibling(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    out.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}
