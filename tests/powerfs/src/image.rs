//! What a reboot finds after a power cut: the durable tree.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path};

/// One durable file or directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A regular file with its durable bytes and permission bits.
    File {
        /// Durable content.
        data: Vec<u8>,
        /// Permission bits (`0o644`).
        mode: u32,
    },
    /// A directory with its durable entries and permission bits.
    Dir {
        /// Durable entries, by name.
        entries: BTreeMap<OsString, Node>,
        /// Permission bits (`0o755`).
        mode: u32,
    },
}

/// The durable state captured at a power cut: only entries reachable from
/// the root through durable directory entries, each file with its durable
/// content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    root: BTreeMap<OsString, Node>,
}

impl Image {
    pub(crate) fn new(root: BTreeMap<OsString, Node>) -> Self {
        Self { root }
    }

    /// The node at `path` (relative to the root; `""` is not a node).
    pub fn get(&self, path: impl AsRef<Path>) -> Option<&Node> {
        let mut entries = &self.root;
        let mut found = None;
        for component in path.as_ref().components() {
            let Component::Normal(name) = component else {
                continue;
            };
            let node = entries.get(name)?;
            found = Some(node);
            entries = match node {
                Node::Dir { entries, .. } => entries,
                Node::File { .. } => &EMPTY,
            };
        }
        found
    }

    /// The durable content of the file at `path`, if it is a file.
    pub fn file(&self, path: impl AsRef<Path>) -> Option<&[u8]> {
        match self.get(path)? {
            Node::File { data, .. } => Some(data),
            Node::Dir { .. } => None,
        }
    }

    /// One line per node, `path  size` for files and `path/` for
    /// directories: for failure reports.
    pub fn listing(&self) -> String {
        fn walk(prefix: &str, entries: &BTreeMap<OsString, Node>, out: &mut String) {
            for (name, node) in entries {
                let path = format!("{prefix}{}", name.to_string_lossy());
                match node {
                    Node::File { data, mode } => {
                        let _ = writeln!(out, "{path}  {} bytes  {mode:o}", data.len());
                    }
                    Node::Dir { entries, .. } => {
                        let _ = writeln!(out, "{path}/");
                        walk(&format!("{path}/"), entries, out);
                    }
                }
            }
        }
        let mut out = String::new();
        walk("", &self.root, &mut out);
        if out.is_empty() {
            out.push_str("(empty)\n");
        }
        out
    }

    /// Writes the durable tree into `dir` (created if missing), so that a
    /// program can open it on a real file system.
    pub fn write_to(&self, dir: impl AsRef<Path>) -> io::Result<()> {
        fn write_entries(dir: &Path, entries: &BTreeMap<OsString, Node>) -> io::Result<()> {
            for (name, node) in entries {
                let path = dir.join(name);
                match node {
                    Node::File { data, mode } => {
                        fs::write(&path, data)?;
                        fs::set_permissions(&path, fs::Permissions::from_mode(*mode))?;
                    }
                    Node::Dir { entries, mode } => {
                        fs::create_dir(&path)?;
                        write_entries(&path, entries)?;
                        fs::set_permissions(&path, fs::Permissions::from_mode(*mode))?;
                    }
                }
            }
            Ok(())
        }
        let dir = dir.as_ref();
        fs::create_dir_all(dir)?;
        write_entries(dir, &self.root)
    }
}

static EMPTY: BTreeMap<OsString, Node> = BTreeMap::new();

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Image {
        let sub = BTreeMap::from([(
            OsString::from("k"),
            Node::File {
                data: b"secret".to_vec(),
                mode: 0o600,
            },
        )]);
        Image::new(BTreeMap::from([
            (
                OsString::from("d"),
                Node::Dir {
                    entries: sub,
                    mode: 0o755,
                },
            ),
            (
                OsString::from("e"),
                Node::Dir {
                    entries: BTreeMap::new(),
                    mode: 0o700,
                },
            ),
        ]))
    }

    #[test]
    fn lookup_by_path() {
        let img = sample();
        assert_eq!(img.file("d/k"), Some(&b"secret"[..]));
        assert!(img.file("d").is_none());
        assert!(img.get("d/k/x").is_none());
        assert!(img.get("nope").is_none());
        assert_eq!(img.listing(), "d/\nd/k  6 bytes  600\ne/\n");
    }

    #[test]
    fn writes_a_real_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("img");
        sample().write_to(&out).unwrap();
        assert_eq!(fs::read(out.join("d/k")).unwrap(), b"secret");
        let mode = fs::metadata(out.join("d/k")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(out.join("e").is_dir());
    }
}
