//! A unified-diff parser (seed 000 §8.2.4 "`patch.diff` MUST be parseable as a
//! unified diff"). It understands `git diff` output (extended headers: modes,
//! new/deleted files, renames, copies, similarity, `index`, binary patches)
//! as well as plain `diff -u` output, `/dev/null` sides,
//! `\ No newline at end of file`, and checks that every hunk's line counts add
//! up. Errors carry the 1-based line number. It never panics.

use serde::Serialize;
use std::collections::BTreeSet;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Modified,
    Added,
    Deleted,
    Renamed,
    Copied,
}

/// One hunk: its header numbers and what its body contained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// 1-based line of the `@@` header in the diff.
    pub line: u32,
    pub old_start: u32,
    pub old_count: u32,
    pub new_start: u32,
    pub new_count: u32,
    pub section: String,
    pub added: u32,
    pub removed: u32,
    pub context: u32,
}

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilePatch {
    /// 1-based line where the file section starts.
    pub line: u32,
    /// Path before the change (`None` for an added file).
    pub old_path: Option<String>,
    /// Path after the change (`None` for a deleted file).
    pub new_path: Option<String>,
    pub kind: ChangeKind,
    pub old_mode: Option<String>,
    pub new_mode: Option<String>,
    pub similarity: Option<u8>,
    pub binary: bool,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// The path this section is about (the new path unless deleted).
    #[must_use]
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// A parsed patch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Patch {
    pub files: Vec<FilePatch>,
}

impl Patch {
    /// Every repository path the patch reads or writes (both sides of a rename
    /// or copy), sorted.
    #[must_use]
    pub fn touched_paths(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for f in &self.files {
            out.extend(f.old_path.iter().cloned());
            out.extend(f.new_path.iter().cloned());
        }
        out
    }

    /// Paths the patch creates (added files, rename and copy targets).
    #[must_use]
    pub fn created_paths(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter(|f| {
                matches!(
                    f.kind,
                    ChangeKind::Added | ChangeKind::Copied | ChangeKind::Renamed
                )
            })
            .filter_map(|f| f.new_path.clone())
            .collect()
    }

    /// Paths whose content the patch writes or removes: every touched path
    /// except the source of a copy (which is only read).
    #[must_use]
    pub fn written_paths(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for f in &self.files {
            if f.kind != ChangeKind::Copied {
                out.extend(f.old_path.iter().cloned());
            }
            out.extend(f.new_path.iter().cloned());
        }
        out
    }

    #[must_use]
    pub fn added_lines(&self) -> u64 {
        self.files
            .iter()
            .flat_map(|f| &f.hunks)
            .map(|h| u64::from(h.added))
            .sum()
    }

    #[must_use]
    pub fn removed_lines(&self) -> u64 {
        self.files
            .iter()
            .flat_map(|f| &f.hunks)
            .map(|h| u64::from(h.removed))
            .sum()
    }
}

/// Why a patch is not a valid unified diff, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DiffError {
    pub line: u32,
    pub message: String,
}

fn err<T>(line: u32, message: impl Into<String>) -> Result<T, DiffError> {
    Err(DiffError {
        line,
        message: message.into(),
    })
}

/// Parses `text` as a unified diff. An empty (or blank) text is a valid
/// empty patch; a text with content but no file header is not a diff.
/// Text before the first file header (e.g. a `git format-patch` mail header)
/// is ignored, except a hunk header there (a hunk of no file); after it,
/// every line must belong to the patch, except a `-- ` mail signature that
/// ends it.
pub fn parse(text: &str) -> Result<Patch, DiffError> {
    Parser::new(text).run()
}

struct Parser<'t> {
    lines: Vec<&'t str>,
    pos: usize,
    files: Vec<FilePatch>,
}

fn line_no(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Self {
        let mut lines: Vec<&str> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        Self {
            lines,
            pos: 0,
            files: Vec::new(),
        }
    }

    fn peek(&self, offset: usize) -> Option<&'t str> {
        self.lines.get(self.pos + offset).copied()
    }

    fn is_plain_header(&self) -> bool {
        matches!(self.peek(0), Some(l) if l.starts_with("--- "))
            && matches!(self.peek(1), Some(l) if l.starts_with("+++ "))
    }

    fn run(mut self) -> Result<Patch, DiffError> {
        // Preamble: anything before the first file header (a mail header,
        // a commit message). A hunk there belongs to no file, and a text
        // with content but no file header at all is not a unified diff.
        let mut first_content = None;
        while let Some(line) = self.peek(0) {
            if line.starts_with("diff --git ") || self.is_plain_header() {
                break;
            }
            if line.starts_with("@@ ") {
                return err(
                    line_no(self.pos),
                    "a hunk header before any file header (`diff --git` or `---`/`+++`)",
                );
            }
            if first_content.is_none() && !line.trim().is_empty() {
                first_content = Some(self.pos);
            }
            self.pos += 1;
        }
        if let (None, Some(first)) = (self.peek(0), first_content) {
            return err(
                line_no(first),
                "no file header (`diff --git` or `---`/`+++`) in a text that is not empty: not a unified diff",
            );
        }
        while let Some(line) = self.peek(0) {
            if line.starts_with("diff --git ") {
                self.git_file()?;
            } else if self.is_plain_header() {
                self.plain_file()?;
            } else if line == "-- " {
                break; // mail signature ends the patch
            } else if line.trim().is_empty() {
                self.pos += 1;
            } else if line.starts_with("diff ")
                || line.starts_with("Only in ")
                || line.starts_with("Index: ")
                || line.starts_with("====")
            {
                // `diff -ru` command lines and svn-style separators between files.
                self.pos += 1;
            } else {
                return err(
                    line_no(self.pos),
                    format!(
                        "unexpected line outside any file or hunk: {:?}",
                        truncate_for_message(line)
                    ),
                );
            }
        }
        Ok(Patch { files: self.files })
    }

    fn git_file(&mut self) -> Result<(), DiffError> {
        let start = self.pos;
        let header = self.lines.get(start).copied().unwrap_or_default();
        let (mut old_path, mut new_path) =
            match parse_git_header_paths(header.strip_prefix("diff --git ").unwrap_or_default()) {
                Some((a, b)) => (Some(a), Some(b)),
                None => (None, None),
            };
        let mut file = FilePatch {
            line: line_no(start),
            old_path: None,
            new_path: None,
            kind: ChangeKind::Modified,
            old_mode: None,
            new_mode: None,
            similarity: None,
            binary: false,
            hunks: Vec::new(),
        };
        let (mut rename_from, mut rename_to, mut copy_from, mut copy_to) = (None, None, None, None);
        self.pos += 1;
        while let Some(line) = self.peek(0) {
            let n = line_no(self.pos);
            if let Some(rest) = line.strip_prefix("old mode ") {
                file.old_mode = Some(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("new mode ") {
                file.new_mode = Some(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("deleted file mode ") {
                file.kind = ChangeKind::Deleted;
                file.old_mode = Some(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("new file mode ") {
                file.kind = ChangeKind::Added;
                file.new_mode = Some(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("rename from ") {
                rename_from = Some(unquote(rest, n)?);
            } else if let Some(rest) = line.strip_prefix("rename to ") {
                rename_to = Some(unquote(rest, n)?);
            } else if let Some(rest) = line.strip_prefix("copy from ") {
                copy_from = Some(unquote(rest, n)?);
            } else if let Some(rest) = line.strip_prefix("copy to ") {
                copy_to = Some(unquote(rest, n)?);
            } else if let Some(rest) = line
                .strip_prefix("similarity index ")
                .or_else(|| line.strip_prefix("dissimilarity index "))
            {
                let pct = rest
                    .strip_suffix('%')
                    .and_then(|p| p.parse::<u8>().ok())
                    .filter(|p| *p <= 100);
                match pct {
                    Some(p) => file.similarity = Some(p),
                    None => return err(n, format!("bad similarity index {rest:?}")),
                }
            } else if line.starts_with("index ") {
                // blob ids (and mode); nothing to check.
            } else if line.starts_with("Binary files ") && line.ends_with(" differ") {
                file.binary = true;
            } else if line == "GIT binary patch" {
                file.binary = true;
                self.pos += 1;
                self.skip_binary_patch()?;
                continue;
            } else {
                break;
            }
            self.pos += 1;
        }
        if rename_from.is_some() || rename_to.is_some() {
            match (rename_from, rename_to) {
                (Some(a), Some(b)) => {
                    file.kind = ChangeKind::Renamed;
                    old_path = Some(a);
                    new_path = Some(b);
                }
                _ => return err(file.line, "rename needs both `rename from` and `rename to`"),
            }
        }
        if copy_from.is_some() || copy_to.is_some() {
            match (copy_from, copy_to) {
                (Some(a), Some(b)) => {
                    file.kind = ChangeKind::Copied;
                    old_path = Some(a);
                    new_path = Some(b);
                }
                _ => return err(file.line, "copy needs both `copy from` and `copy to`"),
            }
        }
        if self.is_plain_header() {
            let (minus, plus) = self.file_header_pair()?;
            // The ---/+++ lines are authoritative about /dev/null sides.
            match (&minus, &plus) {
                (None, None) => {
                    return err(
                        line_no(self.pos - 2),
                        "both sides of the file header are /dev/null",
                    );
                }
                (None, Some(_)) => {
                    if !matches!(file.kind, ChangeKind::Added | ChangeKind::Modified) {
                        return err(
                            line_no(self.pos - 2),
                            "`--- /dev/null` on a file that is not added",
                        );
                    }
                    file.kind = ChangeKind::Added;
                }
                (Some(_), None) => {
                    if !matches!(file.kind, ChangeKind::Deleted | ChangeKind::Modified) {
                        return err(
                            line_no(self.pos - 1),
                            "`+++ /dev/null` on a file that is not deleted",
                        );
                    }
                    file.kind = ChangeKind::Deleted;
                }
                (Some(_), Some(_)) => {
                    if matches!(file.kind, ChangeKind::Added | ChangeKind::Deleted) {
                        return err(
                            line_no(self.pos - 2),
                            "added/deleted file needs /dev/null on one side",
                        );
                    }
                }
            }
            if minus.is_some() && !matches!(file.kind, ChangeKind::Renamed | ChangeKind::Copied) {
                old_path = minus;
            }
            if plus.is_some() && !matches!(file.kind, ChangeKind::Renamed | ChangeKind::Copied) {
                new_path = plus;
            }
            self.hunks(&mut file)?;
            if file.hunks.is_empty() {
                return err(file.line, "file header `---`/`+++` without any hunk");
            }
        }
        match file.kind {
            ChangeKind::Added => old_path = None,
            ChangeKind::Deleted => new_path = None,
            _ => {}
        }
        if old_path.is_none() && new_path.is_none() {
            return err(
                file.line,
                "cannot determine the file path from `diff --git` header",
            );
        }
        file.old_path = old_path;
        file.new_path = new_path;
        self.files.push(file);
        Ok(())
    }

    fn plain_file(&mut self) -> Result<(), DiffError> {
        let start = self.pos;
        let (minus, plus) = self.file_header_pair()?;
        let kind = match (&minus, &plus) {
            (None, None) => {
                return err(
                    line_no(start),
                    "both sides of the file header are /dev/null",
                );
            }
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(_), Some(_)) => ChangeKind::Modified,
        };
        let mut file = FilePatch {
            line: line_no(start),
            old_path: minus,
            new_path: plus,
            kind,
            old_mode: None,
            new_mode: None,
            similarity: None,
            binary: false,
            hunks: Vec::new(),
        };
        self.hunks(&mut file)?;
        if file.hunks.is_empty() {
            return err(file.line, "file header `---`/`+++` without any hunk");
        }
        self.files.push(file);
        Ok(())
    }

    /// Reads `--- a` / `+++ b`; `None` stands for `/dev/null`.
    fn file_header_pair(&mut self) -> Result<(Option<String>, Option<String>), DiffError> {
        let n = line_no(self.pos);
        let minus = self
            .peek(0)
            .and_then(|l| l.strip_prefix("--- "))
            .unwrap_or_default();
        let plus = self
            .peek(1)
            .and_then(|l| l.strip_prefix("+++ "))
            .unwrap_or_default();
        let old = header_path(minus, 'a', n)?;
        let new = header_path(plus, 'b', n + 1)?;
        self.pos += 2;
        Ok((old, new))
    }

    fn hunks(&mut self, file: &mut FilePatch) -> Result<(), DiffError> {
        let mut previous_old_end: u32 = 0;
        while let Some(line) = self.peek(0) {
            if !line.starts_with("@@") {
                break;
            }
            let n = line_no(self.pos);
            let mut hunk = parse_hunk_header(line, n)?;
            if hunk.old_start < previous_old_end {
                return err(
                    n,
                    format!(
                        "hunk starts at old line {} inside or before the previous hunk (ends at {})",
                        hunk.old_start, previous_old_end
                    ),
                );
            }
            previous_old_end = hunk.old_start.saturating_add(hunk.old_count);
            if file.kind == ChangeKind::Added && hunk.old_count != 0 {
                return err(n, "hunk of an added file must have old count 0");
            }
            if file.kind == ChangeKind::Deleted && hunk.new_count != 0 {
                return err(n, "hunk of a deleted file must have new count 0");
            }
            self.pos += 1;
            let (mut old_left, mut new_left) = (hunk.old_count, hunk.new_count);
            let mut last_was_body = false;
            while let Some(body) = self.peek(0) {
                let bn = line_no(self.pos);
                if body.starts_with('\\') {
                    if !last_was_body {
                        return err(bn, "`\\ No newline at end of file` must follow a hunk line");
                    }
                    last_was_body = false;
                    self.pos += 1;
                    continue;
                }
                if old_left == 0 && new_left == 0 {
                    break;
                }
                let first = body.as_bytes().first().copied();
                match first {
                    Some(b' ') | None => {
                        if old_left == 0 || new_left == 0 {
                            return err(
                                bn,
                                format!(
                                    "context line exceeds the hunk counts ({old_left} old, {new_left} new lines left)"
                                ),
                            );
                        }
                        old_left -= 1;
                        new_left -= 1;
                        hunk.context += 1;
                    }
                    Some(b'-') => {
                        if old_left == 0 {
                            return err(bn, "removed line exceeds the hunk's old line count");
                        }
                        old_left -= 1;
                        hunk.removed += 1;
                    }
                    Some(b'+') => {
                        if new_left == 0 {
                            return err(bn, "added line exceeds the hunk's new line count");
                        }
                        new_left -= 1;
                        hunk.added += 1;
                    }
                    _ => {
                        return err(
                            bn,
                            format!(
                                "hunk at line {} ended early: {old_left} old and {new_left} new lines missing",
                                hunk.line
                            ),
                        );
                    }
                }
                last_was_body = true;
                self.pos += 1;
            }
            if old_left != 0 || new_left != 0 {
                return err(
                    line_no(self.pos.min(self.lines.len())),
                    format!(
                        "hunk at line {} is truncated: {old_left} old and {new_left} new lines missing",
                        hunk.line
                    ),
                );
            }
            file.hunks.push(hunk);
        }
        Ok(())
    }

    /// Skips the `literal N`/`delta N` blocks of a `GIT binary patch`.
    fn skip_binary_patch(&mut self) -> Result<(), DiffError> {
        let mut blocks = 0;
        while let Some(line) = self.peek(0) {
            let n = line_no(self.pos);
            if line.starts_with("literal ") || line.starts_with("delta ") {
                let size = line.split_once(' ').map(|(_, s)| s).unwrap_or_default();
                if size.parse::<u64>().is_err() {
                    return err(n, format!("bad binary patch size {size:?}"));
                }
                blocks += 1;
                self.pos += 1;
                while let Some(data) = self.peek(0) {
                    if data.is_empty() {
                        self.pos += 1;
                        break;
                    }
                    let length_char = data.as_bytes().first().copied().unwrap_or_default();
                    if !length_char.is_ascii_alphabetic() {
                        return err(line_no(self.pos), "bad base85 line in binary patch");
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
        if blocks == 0 {
            return err(
                line_no(self.pos),
                "`GIT binary patch` without `literal` or `delta` block",
            );
        }
        Ok(())
    }
}

fn truncate_for_message(line: &str) -> String {
    line.chars().take(80).collect()
}

/// `@@ -a[,b] +c[,d] @@ section`
fn parse_hunk_header(line: &str, n: u32) -> Result<Hunk, DiffError> {
    let bad = || DiffError {
        line: n,
        message: format!("malformed hunk header {:?}", truncate_for_message(line)),
    };
    let rest = line.strip_prefix("@@ -").ok_or_else(bad)?;
    let (ranges, section) = rest.split_once(" @@").ok_or_else(bad)?;
    let (old, new) = ranges.split_once(" +").ok_or_else(bad)?;
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((s, c)) => Some((s.parse().ok()?, c.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old).ok_or_else(bad)?;
    let (new_start, new_count) = range(new).ok_or_else(bad)?;
    if (old_count > 0 && old_start == 0) || (new_count > 0 && new_start == 0) {
        return Err(bad());
    }
    if old_count == 0 && new_count == 0 {
        return err(n, "hunk with zero old and zero new lines");
    }
    Ok(Hunk {
        line: n,
        old_start,
        old_count,
        new_start,
        new_count,
        section: section.strip_prefix(' ').unwrap_or(section).to_owned(),
        added: 0,
        removed: 0,
        context: 0,
    })
}

/// The path of a `---`/`+++` line: strips a trailing tab + timestamp and the
/// `a/` or `b/` prefix; `/dev/null` is `None`.
fn header_path(raw: &str, side: char, n: u32) -> Result<Option<String>, DiffError> {
    let raw = raw.split('\t').next().unwrap_or(raw);
    let unquoted = unquote(raw.trim_end(), n)?;
    if unquoted == "/dev/null" {
        return Ok(None);
    }
    let stripped = strip_side(&unquoted, side);
    if stripped.is_empty() {
        return err(n, "empty path in file header");
    }
    Ok(Some(stripped))
}

fn strip_side(path: &str, side: char) -> String {
    let prefix = format!("{side}/");
    path.strip_prefix(prefix.as_str())
        .unwrap_or(path)
        .to_owned()
}

/// Paths of `diff --git a/X b/Y`. Quoted paths are unquoted; for unquoted
/// paths with spaces the split where both sides agree wins.
fn parse_git_header_paths(rest: &str) -> Option<(String, String)> {
    if rest.starts_with('"') {
        let end = closing_quote(rest)?;
        let (first, tail) = rest.split_at(end + 1);
        let a = unquote(first, 0).ok()?;
        let b = unquote(tail.trim_start(), 0).ok()?;
        return Some((strip_side(&a, 'a'), strip_side(&b, 'b')));
    }
    if let Some(idx) = rest.find(" \"") {
        let (first, tail) = rest.split_at(idx);
        let b = unquote(tail.trim_start(), 0).ok()?;
        return Some((strip_side(first, 'a'), strip_side(&b, 'b')));
    }
    let candidates: Vec<usize> = rest.match_indices(" b/").map(|(i, _)| i).collect();
    let split = candidates
        .iter()
        .copied()
        .find(|&i| {
            let (a, b) = rest.split_at(i);
            strip_side(a, 'a') == strip_side(b.get(1..).unwrap_or_default(), 'b')
        })
        .or_else(|| candidates.first().copied())?;
    let (a, b) = rest.split_at(split);
    Some((
        strip_side(a, 'a'),
        strip_side(b.get(1..).unwrap_or_default(), 'b'),
    ))
}

fn closing_quote(s: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// Git's C-style quoting: `"a/sp\303\251cial \"x\""`.
fn unquote(s: &str, n: u32) -> Result<String, DiffError> {
    let Some(inner) = s.strip_prefix('"') else {
        return Ok(s.to_owned());
    };
    let Some(inner) = inner.strip_suffix('"') else {
        return err(n, format!("unterminated quoted path {s:?}"));
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        let Some(e) = chars.next() else {
            return err(n, "dangling escape in quoted path");
        };
        let decoded = match e {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'\\' => b'\\',
            b'"' => b'"',
            b'0'..=b'3' => {
                let d1 = chars.next().filter(|d| (b'0'..=b'7').contains(d));
                let d2 = chars.next().filter(|d| (b'0'..=b'7').contains(d));
                match (d1, d2) {
                    (Some(d1), Some(d2)) => ((e - b'0') << 6) | ((d1 - b'0') << 3) | (d2 - b'0'),
                    _ => return err(n, "bad octal escape in quoted path"),
                }
            }
            other => {
                return err(
                    n,
                    format!("unknown escape \\{} in quoted path", other as char),
                );
            }
        };
        bytes.push(decoded);
    }
    String::from_utf8(bytes).or_else(|_| err(n, "quoted path is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIT: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 83db48f..bf269f4 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,4 @@ fn main()
 line one
-line two
+line 2
+line 2b
 line three
\\ No newline at end of file
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/old.txt b/old.txt
deleted file mode 100644
index e69de29..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/a.txt b/b.txt
similarity index 90%
rename from a.txt
rename to b.txt
index 1..2 100644
--- a/a.txt
+++ b/b.txt
@@ -1 +1 @@
-x
+y
diff --git a/c.txt b/d.txt
similarity index 100%
copy from c.txt
copy to d.txt
diff --git a/img.png b/img.png
new file mode 100644
index 0000000..1111111
Binary files /dev/null and b/img.png differ
diff --git a/bin.dat b/bin.dat
index 1..2 100644
GIT binary patch
literal 3
KcmZ?wWMlvW00IC2

literal 0
HcmV?d00001

diff --git a/script.sh b/script.sh
old mode 100644
new mode 100755
";

    #[test]
    fn parses_git_extended_diff() {
        let p = parse(GIT).unwrap();
        let kinds: Vec<_> = p
            .files
            .iter()
            .map(|f| (f.path().to_owned(), f.kind))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("src/lib.rs".into(), ChangeKind::Modified),
                ("docs/new.md".into(), ChangeKind::Added),
                ("old.txt".into(), ChangeKind::Deleted),
                ("b.txt".into(), ChangeKind::Renamed),
                ("d.txt".into(), ChangeKind::Copied),
                ("img.png".into(), ChangeKind::Added),
                ("bin.dat".into(), ChangeKind::Modified),
                ("script.sh".into(), ChangeKind::Modified),
            ]
        );
        assert_eq!(p.files[0].hunks[0].added, 2);
        assert_eq!(p.files[0].hunks[0].section, "fn main()");
        assert_eq!(p.files[2].old_path.as_deref(), Some("old.txt"));
        assert_eq!(p.files[2].new_path, None);
        assert_eq!(p.files[3].similarity, Some(90));
        assert!(p.files[5].binary && p.files[6].binary);
        assert_eq!(p.files[7].new_mode.as_deref(), Some("100755"));
        assert!(p.touched_paths().contains("a.txt"));
        assert!(p.written_paths().contains("a.txt"));
        assert!(!p.written_paths().contains("c.txt"));
        assert!(p.created_paths().contains("docs/new.md"));
        assert_eq!(p.added_lines(), 5);
        assert_eq!(p.removed_lines(), 3);
    }

    #[test]
    fn parses_plain_diff_u_with_timestamps() {
        let text = "--- src/a.c\t2024-01-01 00:00:00.000000000 +0000\n+++ src/a.c\t2024-01-02 00:00:00.000000000 +0000\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files[0].path(), "src/a.c");
        assert_eq!(p.files[0].kind, ChangeKind::Modified);
    }

    #[test]
    fn empty_diff_is_an_empty_patch() {
        assert_eq!(parse("").unwrap().files.len(), 0);
        assert_eq!(parse("\n  \n\t\n").unwrap().files.len(), 0);
    }

    #[test]
    fn text_without_a_file_header_is_not_a_diff() {
        // Given text that is not empty but names no file,
        // when it is parsed, then it is refused at its first line of content.
        let e = parse("\nthis is not a diff at all\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("no file header"), "{e}");
        // A lone `---` line is not a file header either.
        assert_eq!(parse("--- a/src/x\n").unwrap_err().line, 1);
        // A mail with no patch in it is not a diff.
        assert!(parse("From abc Mon Sep 17 00:00:00 2001\nSubject: x\n").is_err());
    }

    #[test]
    fn a_hunk_before_any_file_header_is_refused() {
        let e = parse("junk\n@@ -1,3 +1,3 @@\n-a\n+b\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let later = "@@ -1 +1 @@\n-a\n+b\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(parse(later).unwrap_err().line, 1);
    }

    #[test]
    fn wrong_counts_are_rejected_with_line() {
        let short = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n";
        let e = parse(short).unwrap_err();
        assert!(e.message.contains("truncated"), "{e}");
        let long = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n";
        let e = parse(long).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
    }

    #[test]
    fn malformed_headers_are_rejected() {
        assert_eq!(
            parse("--- a/x\n+++ b/x\n@@ -1 +1\n-a\n+b\n")
                .unwrap_err()
                .line,
            3
        );
        assert_eq!(parse("--- a/x\n+++ b/x\n").unwrap_err().line, 1);
        assert_eq!(
            parse("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n")
                .unwrap_err()
                .line,
            1
        );
        let added_with_old = "--- /dev/null\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(parse(added_with_old).unwrap_err().line, 3);
        let garbage = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nrandom garbage\n";
        assert_eq!(parse(garbage).unwrap_err().line, 6);
        let overlapping = "--- a/x\n+++ b/x\n@@ -5,2 +5,2 @@\n-a\n+b\n c\n@@ -3 +3 @@\n-a\n+b\n";
        assert_eq!(parse(overlapping).unwrap_err().line, 7);
        let stray_marker = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n";
        assert_eq!(parse(stray_marker).unwrap_err().line, 4);
    }

    #[test]
    fn quoted_and_spaced_paths() {
        let text = "diff --git \"a/sp ace/\\303\\251.txt\" \"b/sp ace/\\303\\251.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/sp ace/\\303\\251.txt\"\n@@ -0,0 +1 @@\n+x\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files[0].path(), "sp ace/é.txt");
        let spaced = "diff --git a/my file b/my file\nold mode 100644\nnew mode 100755\n";
        assert_eq!(parse(spaced).unwrap().files[0].path(), "my file");
    }

    #[test]
    fn preamble_and_signature_are_ignored() {
        let text = "From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n x | 2 +-\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n-- \n2.40.0\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files.len(), 1);
    }
}
