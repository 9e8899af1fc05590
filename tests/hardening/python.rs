//! A learner's Python is read, never run (issue "The course's Python runs as written"): code that
//! would touch the server if it ran (`os`, `open`, `eval`, `exec`, `__import__`, `subprocess`,
//! `spark.conf`) is refused at its line, and nothing it asks for happens: the file it would
//! write is not there, no Python interpreter is started (a `python` placed first on the PATH
//! would leave a mark; the process table holds no `python` child), and Reckon's executable
//! links no Python runtime.

use std::path::Path;
use std::process::Stdio;

use super::common::{TestLab, stderr, stdout};

/// Programs that each write `MARK` if any line of them ran.
const HOSTILE: [(&str, &str); 11] = [
    ("import os\nos.system(\"touch MARK\")\n", "t.py:2:1"),
    ("open(\"MARK\", \"w\").write(\"ran\")\n", "t.py:1:1"),
    (
        "eval(\"__import__('os').system('touch MARK')\")\n",
        "t.py:1:1",
    ),
    ("exec(\"open('MARK', 'w')\")\n", "t.py:1:1"),
    (
        "__import__(\"subprocess\").run([\"touch\", \"MARK\"])\n",
        "t.py:1:1",
    ),
    (
        "import subprocess\nsubprocess.run([\"touch\", \"MARK\"])\n",
        "t.py:2:1",
    ),
    (
        "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    open(\"MARK\", \"w\")\n    return spark.read.table(\"a\")\n",
        "t.py:5:5",
    ),
    (
        "from pyspark import pipelines as dp\n\n@dp.table\ndef t():\n    return spark.read.table(spark.conf.get(\"MARK\"))\n",
        "t.py:5:",
    ),
    (
        "from pyspark import pipelines as dp\n\n@dp.table(name=__import__(\"os\").system(\"touch MARK\"))\ndef t():\n    return spark.read.table(\"a\")\n",
        "t.py:3:",
    ),
    (
        "from pyspark import pipelines as dp\n\n@dp.table\ndef t(x=open(\"MARK\", \"w\")):\n    return spark.read.table(\"a\")\n",
        "t.py:4:",
    ),
    (
        "from pyspark import pipelines as dp\nimport os\nPATH = os.environ[\"MARK\"]\n\n@dp.table\ndef t():\n    return spark.read.table(PATH)\n",
        "t.py:",
    ),
];

#[test]
fn hostile_python_is_refused_at_its_line_and_nothing_of_it_runs() {
    let lab = TestLab::new("python-hostile");
    // A `python` first on the PATH that leaves a mark if anything starts it.
    let shims = lab.data().join("shims");
    std::fs::create_dir_all(&shims).unwrap();
    let started = lab.data().join("python-started");
    for name in [
        "python",
        "python3",
        "python3.11",
        "python3.12",
        "python3.13",
    ] {
        let shim = shims.join(name);
        std::fs::write(
            &shim,
            format!("#!/bin/sh\necho \"$0 $*\" >> {}\n", started.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        shims.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (code, place) in HOSTILE {
        let dir = lab.data().join("p");
        let mark = dir.join("MARK");
        let code = code.replace("MARK", &mark.display().to_string());
        write_project(&dir, &code);
        for verb in ["validate", "run"] {
            let mut command = lab.command(&["pipeline", verb, dir.to_str().unwrap()]);
            command
                .env("PATH", &path)
                .current_dir(&dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let child = command.spawn().unwrap();
            let pid = child.id();
            let mut pythons = vec![];
            // While it reads the file, no child of it is a Python interpreter.
            while alive(pid) {
                pythons.extend(python_children(pid));
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            let out = child.wait_with_output().unwrap();
            let said = format!("{}{}", stdout(&out), stderr(&out));
            assert_eq!(out.status.code(), Some(2), "{verb} {code}\n{said}");
            assert!(said.contains(place), "{code}\nwanted {place}: {said}");
            assert!(!mark.exists(), "{code} ran: {} exists", mark.display());
            assert!(pythons.is_empty(), "{code} started {pythons:?}");
        }
    }
    assert!(
        !started.exists(),
        "a python was started: {}",
        std::fs::read_to_string(&started).unwrap_or_default()
    );
    // No project table was written by any of them.
    assert!(!lab.data().join("tables").join("t").exists());
}

#[test]
fn reckons_executable_links_no_python_runtime() {
    let exe = env!("CARGO_BIN_EXE_reckon");
    let ldd = std::process::Command::new("ldd").arg(exe).output().unwrap();
    let linked = String::from_utf8_lossy(&ldd.stdout).to_string();
    assert!(linked.contains("libc"), "ldd says: {linked}");
    assert!(!linked.contains("python"), "{exe} links: {linked}");
    // Nor is one built in: an embedded CPython brings its entry points.
    let bytes = std::fs::read(exe).unwrap();
    for symbol in [
        &b"Py_InitializeEx"[..],
        b"PyRun_SimpleString",
        b"PyEval_EvalCode",
    ] {
        assert!(
            !bytes.windows(symbol.len()).any(|w| w == symbol),
            "{exe} holds {}",
            String::from_utf8_lossy(symbol)
        );
    }
}

fn write_project(dir: &Path, code: &str) {
    std::fs::create_dir_all(dir.join("transformations")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: p\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )
    .unwrap();
    std::fs::write(dir.join("transformations/t.py"), code).unwrap();
}

/// Whether `pid` runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Processes whose parent is `pid` (or its children) and whose name starts with `python`.
fn python_children(pid: u32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let mut out = vec![];
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let parent: Option<u32> = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok());
        if comm.starts_with("python") && descends(parent, pid) {
            out.push(format!("{comm} (parent {parent:?})"));
        }
    }
    out
}

/// Whether a process with parent `parent` descends from `pid`.
fn descends(mut parent: Option<u32>, pid: u32) -> bool {
    for _ in 0..32 {
        match parent {
            Some(p) if p == pid => return true,
            Some(0 | 1) | None => return false,
            Some(p) => {
                parent = std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| {
                        let close = s.rfind(')')?;
                        s[close + 1..].split_whitespace().nth(1)?.parse().ok()
                    });
            }
        }
    }
    false
}
