//! The shell blocks: which run, and running each in a folder of its own.

use super::*;

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
