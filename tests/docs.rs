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

mod common;

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

/// What the docs test does with a block.
#[derive(Debug, PartialEq)]
enum Kind {
    Run,
    Skip(String),
    /// An info string that looks like a shell block but is neither form.
    Bad(String),
    /// Another language: not a command.
    Other,
}

fn kind(info: &str) -> Kind {
    let first = info.split_whitespace().next().unwrap_or("");
    match first {
        "sh" => {
            let rest = info["sh".len()..].trim();
            if rest.is_empty() {
                return Kind::Run;
            }
            match rest.strip_prefix("no-run:").map(str::trim) {
                Some("") => Kind::Bad("`sh no-run:` needs a reason after the colon".into()),
                Some(reason) => Kind::Skip(reason.to_string()),
                None => Kind::Bad(format!(
                    "info string {info:?}: write `sh`, or `sh no-run: <reason>`"
                )),
            }
        }
        "bash" | "shell" | "console" | "zsh" | "shell-session" => Kind::Bad(format!(
            "info string {info:?}: shell blocks are `sh` (run by this test) or `sh no-run: <reason>`"
        )),
        _ => Kind::Other,
    }
}

#[test]
fn info_strings_are_read_as_documented() {
    assert_eq!(kind("sh"), Kind::Run);
    assert_eq!(
        kind("sh no-run: starts the server"),
        Kind::Skip("starts the server".into())
    );
    assert!(matches!(kind("sh no-run:"), Kind::Bad(_)));
    assert!(matches!(kind("sh no-run"), Kind::Bad(_)));
    assert!(matches!(kind("sh norun: x"), Kind::Bad(_)));
    assert!(matches!(kind("bash"), Kind::Bad(_)));
    assert_eq!(kind("text"), Kind::Other);
    assert_eq!(kind("shell-like"), Kind::Other);
    assert_eq!(kind(""), Kind::Other);
}

/// Runs one block in a folder of its own; its output when it fails.
fn run(block: &Block, bin_dir: &Path) -> Result<(), String> {
    let stem = block
        .page
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("page")
        .to_lowercase();
    let lab = common::TestLab::new(&format!("docs-{stem}-{}", block.line));
    let data = lab.data().join("data");
    let work = lab.data().join("work");
    for dir in [&data, &work] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let script = lab.data().join("block.sh");
    std::fs::write(&script, &block.text).map_err(|e| e.to_string())?;
    let output_path = lab.data().join("output");
    let output = File::create(&output_path).map_err(|e| e.to_string())?;
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![bin_dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).map_err(|e| e.to_string())?
        }
        None => bin_dir.as_os_str().to_os_string(),
    };
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail"])
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .env("DATA", &data)
        .env("RECKON_DATA", &data)
        .env("RECKON_TOPIC", &lab.topic)
        .env_remove("RECKON_BROKERS")
        .env_remove("RECKON_LAB")
        .env_remove("RECKON_INSTRUCTOR_TOKEN")
        .env_remove("RECKON_BROKER_HOME")
        .env_remove("RECKON_BROKER_PORT")
        .stdin(Stdio::null())
        .stdout(output.try_clone().map_err(|e| e.to_string())?)
        .stderr(output)
        // Its own process group, so a block past its time is ended with every command it started.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("bash: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break Ok(status),
            None if started.elapsed() > BLOCK_WALL => {
                // SAFETY: signalling the process group this test started.
                unsafe {
                    libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
                }
                let _ = child.wait();
                break Err(format!("still running after {} s", BLOCK_WALL.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let said = std::fs::read_to_string(&output_path).unwrap_or_default();
    let failed = |how: String| {
        format!(
            "{}:{}: the block {how}\n--- block ---\n{}--- output ---\n{said}",
            block.page.display(),
            block.line,
            block.text
        )
    };
    match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(failed(format!("exited with {status}"))),
        Err(how) => Err(failed(how)),
    }
}

#[test]
fn every_sh_block_runs_or_says_why_not() {
    let bin = Path::new(env!("CARGO_BIN_EXE_reckon"));
    let bin_dir = bin.parent().expect("the binary's folder");
    let mut failures = vec![];
    let (mut ran, mut skipped) = (0, vec![]);
    for page in pages() {
        let (_, blocks) = read_page(&page);
        for block in blocks {
            let at = format!("{}:{}", block.page.display(), block.line);
            match kind(&block.info) {
                Kind::Other => {}
                Kind::Bad(why) => failures.push(format!("{at}: {why}")),
                Kind::Skip(reason) => skipped.push(format!("{at}: {reason}")),
                Kind::Run => {
                    let started = Instant::now();
                    let outcome = run(&block, bin_dir);
                    eprintln!(
                        "{at}: {} in {:.1} s",
                        if outcome.is_ok() { "ran" } else { "FAILED" },
                        started.elapsed().as_secs_f64()
                    );
                    ran += 1;
                    if let Err(e) = outcome {
                        failures.push(e);
                    }
                }
            }
        }
    }
    eprintln!(
        "docs: {ran} sh block(s) run, {} skipped:\n  {}",
        skipped.len(),
        skipped.join("\n  ")
    );
    assert!(
        failures.is_empty(),
        "{} docs block(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(
        ran > 0,
        "no sh block was found to run: is the fence parser broken?"
    );
}

/// A line with its inline code spans removed: a link inside backticks is an example, not a link.
fn outside_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + ticks..];
        let fence = "`".repeat(ticks);
        match after.find(&fence) {
            Some(end) => rest = &after[end + ticks..],
            // An unmatched backtick is a character, not a span.
            None => {
                out.push_str(&rest[start..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the `[text](target)` links of a line (outside code).
fn link_targets(line: &str) -> Vec<String> {
    let line = outside_code(line);
    let mut targets = vec![];
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        // The target ends at the parenthesis that closes the one opened, so `a_(b).md` works.
        let mut depth = 0usize;
        let end = after.char_indices().find_map(|(i, c)| match c {
            '(' => {
                depth += 1;
                None
            }
            ')' if depth == 0 => Some(i),
            ')' => {
                depth -= 1;
                None
            }
            _ => None,
        });
        let Some(end) = end else { break };
        let target = after[..end].trim();
        // `[text](path "title")`: the path is the first word; `<path>` is the path.
        let target = target.split_whitespace().next().unwrap_or("");
        let target = target
            .strip_prefix('<')
            .and_then(|t| t.strip_suffix('>'))
            .unwrap_or(target);
        targets.push(target.to_string());
        rest = &after[end..];
    }
    targets
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    // Markup that does not show: code spans' backticks, emphasis, a link's target.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("Two commands"), "two-commands");
    assert_eq!(
        slug("Module 9: the shop's pipeline"),
        "module-9-the-shops-pipeline"
    );
    assert_eq!(
        slug("When a day is final: `reckon.finalAfterDays`"),
        "when-a-day-is-final-reckonfinalafterdays"
    );
    assert_eq!(
        slug("What if the watermark waited longer?"),
        "what-if-the-watermark-waited-longer"
    );
    assert_eq!(slug("The [JSON](x.md) API"), "the-json-api");
    assert_eq!(
        slug("1. Code: Save and Validate"),
        "1-code-save-and-validate"
    );
}

/// The anchors of a page's headings.
fn anchors(lines: &[(String, bool)]) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = vec![];
    for (line, in_code) in lines {
        if *in_code {
            continue;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(text);
        let n = seen.entry(base.clone()).or_insert(0);
        anchors.push(match *n {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        });
        *n += 1;
    }
    anchors
}

/// `path` with `.` and `..` taken out, without touching the disk.
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Whether git ignores `path` (under the root); `false` where git cannot say.
fn ignored(path: &Path) -> bool {
    Command::new("git")
        .args(["check-ignore", "-q", "--no-index"])
        .arg(path)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn every_relative_link_resolves() {
    let root = root();
    let mut failures = vec![];
    let mut checked = 0;
    for page in pages() {
        let (lines, _) = read_page(&page);
        for (i, (line, in_code)) in lines.iter().enumerate() {
            if *in_code {
                continue;
            }
            for target in link_targets(line) {
                let at = format!("{}:{}: ({target})", page.display(), i + 1);
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let dir = page.parent().unwrap_or(Path::new(""));
                let linked = match path {
                    "" => page.clone(),
                    path => match normal(&dir.join(path)) {
                        Some(p) => p,
                        None => {
                            failures.push(format!("{at}: leaves the repository"));
                            continue;
                        }
                    },
                };
                if !root.join(&linked).exists() {
                    failures.push(format!("{at}: {} does not exist", linked.display()));
                    continue;
                }
                if ignored(&linked) {
                    failures.push(format!(
                        "{at}: git ignores {}, so a clone lacks it",
                        linked.display()
                    ));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if linked.extension().is_none_or(|e| e != "md") {
                    failures.push(format!("{at}: an anchor into a page that is not markdown"));
                    continue;
                }
                let (linked_lines, _) = read_page(&linked);
                let known = anchors(&linked_lines);
                if !known.iter().any(|a| a == anchor) {
                    failures.push(format!(
                        "{at}: {} has no heading #{anchor}; its anchors: {}",
                        linked.display(),
                        known.join(", ")
                    ));
                }
            }
        }
    }
    eprintln!("docs: {checked} relative link(s) checked");
    assert!(
        failures.is_empty(),
        "{} broken link(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        checked > 0,
        "no relative link was found: is the link reader broken?"
    );
}
