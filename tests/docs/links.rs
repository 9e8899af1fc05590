//! The links: every relative link names a file git keeps, every anchor a heading.

use super::*;

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
