//! Where a bench's figures go, and the smoke run. A full bench (`make bench`) rewrites its section
//! of `bench/results.md`, naming the commit it measured. A smoke run (`RECKON_BENCH_SMOKE=1`, as
//! `scripts/bench-smoke.sh` runs every bench in CI at a small size) proves the bench still runs:
//! it leaves `bench/results.md` as it is, and runs a peer (Spark, DuckDB) only when installed.

use std::path::Path;
use std::process::Command;

/// Whether this is a smoke run.
pub fn smoke() -> bool {
    std::env::var_os("RECKON_BENCH_SMOKE").is_some_and(|v| v == "1")
}

/// Whether PySpark and delta-spark import, for the Spark peers.
pub fn spark_installed() -> bool {
    Command::new("python3")
        .args(["-c", "import pyspark, delta"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether to run peer `name`: in a full bench always (a peer that is missing then fails the
/// bench, naming what to install); in a smoke run only when `installed`, saying so when not.
pub fn peer(name: &str, installed: bool) -> bool {
    if smoke() && !installed {
        println!("{name}: not installed, skipped in this smoke run");
        return false;
    }
    true
}

/// The commit measured: `git describe`'s short hash, `-dirty` when the tree has changes.
fn commit() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["describe", "--always", "--dirty", "--abbrev=10"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown (not a git checkout)".into())
}

/// Replaces the part of `path` between the markers `start` and `end` (both kept) with `section`
/// and a line naming the commit measured, or adds it at the end when the markers are not there.
/// A smoke run writes nothing.
pub fn replace_section(path: &Path, start: &str, end: &str, section: &str) -> anyhow::Result<()> {
    if smoke() {
        println!("smoke run: {} left as it is", path.display());
        return Ok(());
    }
    let section = match section.strip_suffix(end) {
        Some(body) => format!(
            "{}\n\nMeasured at commit `{}`.\n{end}",
            body.trim_end(),
            commit()
        ),
        None => section.to_string(),
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let text = match (text.find(start), text.find(end)) {
        (Some(a), Some(b)) if a < b => format!("{}{section}{}", &text[..a], &text[b + end.len()..]),
        _ => format!("{}\n\n{section}\n", text.trim_end()),
    };
    std::fs::write(path, text)?;
    Ok(())
}
