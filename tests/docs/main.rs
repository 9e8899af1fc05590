//! The docs are true: `README.md` and every `docs/*.md` page are read, their shell blocks run and
//! their links followed.
//!
//! **Shell blocks.** A fenced block whose info string is `sh` is run with `bash -euo pipefail`.
//! A block that cannot run in a test is written with the info string `sh no-run: <reason>`,
//! exactly so (for example "```sh no-run: starts the server and keeps running"); the reason is
//! required. Any other info string beginning with the word `sh` (`sh no-run` without a reason,
//! `sh norun: ...`), and a block marked `bash`, `shell`, `console`, `zsh` or `shell-session`,
//! fails the test: every command block in the docs is either run or skipped for a reason it says.
//! Blocks in other languages (`text`, `sql`, `yaml`, ...) are left alone.
//!
//! Each runnable block gets a fresh temporary folder of its own: an empty working folder, a data
//! folder named by `DATA` (and `RECKON_DATA`, so a command without `--data` stays inside it), a
//! topic no other block uses as `RECKON_TOPIC` (the `--topic` option's variable) on the local
//! broker at 127.0.0.1:9092 that the other tests share (`common::TestLab` starts it), and the
//! `reckon` built for this test first on `PATH`. The docs write their commands as
//! `reckon --data "$DATA" ...`. A block that exits non-zero, or runs past [`BLOCK_WALL`], fails
//! the test naming its file and line, with its text and output.
//!
//! **Links.** Every relative link `[text](path)` and `[text](path#anchor)` (images too) outside
//! code must name a file or folder of the repository that git does not ignore (an ignored file
//! is missing from a clone), and an anchor a heading of the page it names, by GitHub's slugs:
//! lowercase, spaces to `-`, punctuation dropped, a repeated heading's slug suffixed `-1`, `-2`.

mod blocks;
#[path = "../common/mod.rs"]
mod common;
mod links;

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one block may run: the docs keep their runnable blocks to seconds.
const BLOCK_WALL: Duration = Duration::from_secs(180);

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("server/ sits in the repository")
        .to_path_buf()
}

/// `README.md` and `docs/*.md`, as paths from the root.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| Path::new("docs").join(p.file_name().expect("a file name")))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// One fenced block of a page.
struct Block {
    page: PathBuf,
    /// The line of its opening fence, from 1.
    line: usize,
    info: String,
    text: String,
}

/// A page's lines, each with whether it is inside a fenced block (fences included), and its
/// fenced blocks.
fn read_page(page: &Path) -> (Vec<(String, bool)>, Vec<Block>) {
    let text = std::fs::read_to_string(root().join(page))
        .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let mut lines = vec![];
    let mut blocks = vec![];
    // The open fence: its character, length, indentation, and the block so far.
    let mut open: Option<(char, usize, usize, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let trimmed = line.trim_start_matches(' ');
        let fence = ['`', '~']
            .into_iter()
            .find(|c| trimmed.starts_with(&c.to_string().repeat(3)))
            .map(|c| (c, trimmed.len() - trimmed.trim_start_matches(c).len()));
        let closes = match (&open, fence) {
            (Some((c, n, _, _)), Some((c2, n2))) => {
                *c == c2 && n2 >= *n && trimmed.trim_start_matches(c2).trim().is_empty()
            }
            _ => false,
        };
        if closes {
            let (_, _, _, block) = open.take().expect("a block is open");
            blocks.push(block);
            lines.push((line.to_string(), true));
        } else if let Some((_, _, at, block)) = &mut open {
            let cut = indent.min(*at);
            block.text.push_str(&line[cut..]);
            block.text.push('\n');
            lines.push((line.to_string(), true));
        } else if let Some((c, n)) = fence {
            let block = Block {
                page: page.to_path_buf(),
                line: i + 1,
                info: trimmed[n..].trim().to_string(),
                text: String::new(),
            };
            open = Some((c, n, indent, block));
            lines.push((line.to_string(), true));
        } else {
            lines.push((line.to_string(), false));
        }
    }
    if let Some((_, _, _, block)) = open {
        panic!(
            "{}:{}: a fenced block is never closed",
            page.display(),
            block.line
        );
    }
    (lines, blocks)
}
