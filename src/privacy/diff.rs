//! Which lines a change added, from unified diff text.
//!
//! Only added lines are scanned in a pull request or `--diff` run, so a secret already in
//! history does not block unrelated work (it is for a full scan to find). Both `git diff`
//! output and the per-file `patch` text of GitHub's pull request files API are accepted.

use std::ops::RangeInclusive;

/// One file of a multi-file unified diff, as it exists after the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Path after the change, relative to the repository root.
    pub path: String,
    /// Added lines (1-based, new side), merged into ascending ranges.
    pub added: Vec<RangeInclusive<u32>>,
    /// Git reported the file as binary (no hunks).
    pub binary: bool,
}

/// Parses `git diff` output (with `a/` and `b/` prefixes). Deleted files are left out.
pub fn parse_unified_diff(diff: &str) -> Vec<FileDiff> {
    let mut files = Vec::new();
    let mut current: Option<FileDiff> = None;
    let mut deleted = false;
    let mut hunk = Hunk::default();
    for line in diff.lines() {
        if hunk.active() {
            hunk.feed(line);
            if let Some(file) = current.as_mut() {
                hunk.flush_into(&mut file.added);
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            finish(&mut files, current.take(), deleted);
            deleted = false;
            current = Some(FileDiff {
                path: header_new_path(rest).unwrap_or_default(),
                added: Vec::new(),
                binary: false,
            });
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            let name = unquote(rest.strip_suffix('\t').unwrap_or(rest));
            match name.strip_prefix("b/") {
                Some(path) => {
                    if let Some(file) = current.as_mut() {
                        file.path = path.to_string();
                    }
                }
                None if name == "/dev/null" => deleted = true,
                None => {
                    if let Some(file) = current.as_mut() {
                        file.path = name;
                    }
                }
            }
        } else if let Some(rest) = line
            .strip_prefix("rename to ")
            .or_else(|| line.strip_prefix("copy to "))
        {
            if let Some(file) = current.as_mut() {
                file.path = unquote(rest);
            }
        } else if line.starts_with("deleted file mode") {
            deleted = true;
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            if let Some(file) = current.as_mut() {
                file.binary = true;
            }
        } else if line.starts_with("@@") {
            hunk = Hunk::parse(line).unwrap_or_default();
        }
    }
    finish(&mut files, current, deleted);
    files
}

/// Added line ranges of one file's hunks (e.g. the `patch` field GitHub returns per file).
pub fn added_line_ranges(patch: &str) -> Vec<RangeInclusive<u32>> {
    let mut added = Vec::new();
    let mut hunk = Hunk::default();
    for line in patch.lines() {
        if hunk.active() {
            hunk.feed(line);
            hunk.flush_into(&mut added);
        } else if line.starts_with("@@") {
            hunk = Hunk::parse(line).unwrap_or_default();
        }
    }
    added
}

fn finish(files: &mut Vec<FileDiff>, file: Option<FileDiff>, deleted: bool) {
    if let Some(file) = file
        && !deleted
        && !file.path.is_empty()
    {
        files.push(file);
    }
}

/// Position inside one hunk: lines left on each side and the next new-side line number.
#[derive(Default)]
struct Hunk {
    old_left: u32,
    new_left: u32,
    new_line: u32,
    pending: Option<u32>,
}

impl Hunk {
    /// `@@ -a,b +c,d @@ …`; a missing count means 1.
    fn parse(header: &str) -> Option<Hunk> {
        let mut parts = header.split_whitespace().skip(1);
        let old = parts.next()?.strip_prefix('-')?;
        let new = parts.next()?.strip_prefix('+')?;
        let count = |s: &str| -> Option<(u32, u32)> {
            match s.split_once(',') {
                Some((start, n)) => Some((start.parse().ok()?, n.parse().ok()?)),
                None => Some((s.parse().ok()?, 1)),
            }
        };
        let (_, old_left) = count(old)?;
        let (new_line, new_left) = count(new)?;
        Some(Hunk {
            old_left,
            new_left,
            new_line,
            pending: None,
        })
    }

    fn active(&self) -> bool {
        self.old_left > 0 || self.new_left > 0
    }

    fn feed(&mut self, line: &str) {
        match line.as_bytes().first() {
            Some(b'+') => {
                self.pending = Some(self.new_line);
                self.new_line += 1;
                self.new_left = self.new_left.saturating_sub(1);
            }
            Some(b'-') => self.old_left = self.old_left.saturating_sub(1),
            // "\ No newline at end of file" belongs to the previous line.
            Some(b'\\') => {}
            _ => {
                self.new_line += 1;
                self.new_left = self.new_left.saturating_sub(1);
                self.old_left = self.old_left.saturating_sub(1);
            }
        }
    }

    fn flush_into(&mut self, added: &mut Vec<RangeInclusive<u32>>) {
        if let Some(line) = self.pending.take() {
            match added.last_mut() {
                Some(last) if *last.end() + 1 == line => *last = *last.start()..=line,
                _ => added.push(line..=line),
            }
        }
    }
}

/// The `b/` path of `diff --git a/x b/x` when both sides agree (no rename), which is
/// what binary and mode-only changes have instead of a `+++` line.
fn header_new_path(rest: &str) -> Option<String> {
    if let Some(quoted) = rest.strip_prefix('"') {
        let close = quoted.find("\" ")? + 1;
        let b_part = rest[close + 2..].trim();
        return unquote(b_part).strip_prefix("b/").map(str::to_string);
    }
    let half = rest.len().checked_sub(1)? / 2;
    let (a, b) = (rest.get(..half)?, rest.get(half + 1..)?);
    match (a.strip_prefix("a/"), b.strip_prefix("b/")) {
        (Some(a), Some(b)) if a == b => Some(b.to_string()),
        _ => rest.rsplit_once(" b/").map(|(_, b)| b.to_string()),
    }
}

/// Git's C-style quoting of unusual path names (`"caf\303\251.yaml"`).
fn unquote(s: &str) -> String {
    let Some(inner) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return s.to_string();
    };
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        if b[k] != b'\\' || k + 1 == b.len() {
            out.push(b[k]);
            k += 1;
            continue;
        }
        let c = b[k + 1];
        k += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let digits = &b[k - 1..(k + 2).min(b.len())];
                let n = digits
                    .iter()
                    .take_while(|d| (b'0'..=b'7').contains(d))
                    .count();
                let value = digits[..n]
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                k += n - 1;
            }
            other => out.push(other),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/specs/a.yaml b/specs/a.yaml
index 1111111..2222222 100644
--- a/specs/a.yaml
+++ b/specs/a.yaml
@@ -3,0 +4,2 @@ name: x
+tenant_id: one
+project_id: two
@@ -10 +12 @@ projects:
-  - name: a
+  - name: b
diff --git a/old.yaml b/old.yaml
deleted file mode 100644
index 3333333..0000000
--- a/old.yaml
+++ /dev/null
@@ -1,2 +0,0 @@
-a: 1
-b: 2
diff --git a/img.png b/img.png
new file mode 100644
index 0000000..4444444
Binary files /dev/null and b/img.png differ
diff --git \"a/caf\\303\\251 x.yaml\" \"b/caf\\303\\251 x.yaml\"
new file mode 100644
--- /dev/null
+++ \"b/caf\\303\\251 x.yaml\"
@@ -0,0 +1,3 @@
++++ not a header
+b
+c
diff --git a/moved.yaml b/renamed.yaml
similarity index 100%
rename from moved.yaml
rename to renamed.yaml
";

    #[test]
    fn parses_git_diff() {
        let files = parse_unified_diff(DIFF);
        assert_eq!(
            files,
            vec![
                FileDiff {
                    path: "specs/a.yaml".into(),
                    added: vec![4..=5, 12..=12],
                    binary: false
                },
                FileDiff {
                    path: "img.png".into(),
                    added: vec![],
                    binary: true
                },
                FileDiff {
                    path: "café x.yaml".into(),
                    added: vec![1..=3],
                    binary: false
                },
                FileDiff {
                    path: "renamed.yaml".into(),
                    added: vec![],
                    binary: false
                },
            ]
        );
    }

    #[test]
    fn github_patch_with_context() {
        let patch = "@@ -1,4 +1,5 @@\n a\n-b\n+B\n+C\n c\n d\n@@ -20,2 +21,3 @@\n x\n+y\n z\n";
        assert_eq!(added_line_ranges(patch), vec![2..=3, 22..=22]);
    }

    #[test]
    fn malformed_hunks_are_ignored() {
        assert_eq!(added_line_ranges("@@ nonsense @@\n+a\n"), vec![]);
        assert_eq!(parse_unified_diff("garbage\n+++ b/x\n"), vec![]);
    }
}
