//! The lab's lock: one run (or reset) of a lab at a time, across the server and the CLI, as an
//! advisory lock on `<data>/reckon.lock` that the process's death releases.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use super::LabError;

/// Held while a run changes the lab; released when dropped (or when the process dies).
pub struct LabLock {
    _file: File,
}

/// Takes the lock of the lab in `dir`, waiting up to `lock_wait` for the run that holds it.
pub(super) fn take(dir: &Path, lock_wait: Duration) -> Result<LabLock, LabError> {
    let io = |source| LabError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let path = dir.join("reckon.lock");
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    let started = Instant::now();
    // Waiting sleeps the thread: let the runtime move other tasks off it meanwhile.
    crate::kafka::blocking(|| {
        loop {
            match file.try_lock() {
                Ok(()) => break Ok(()),
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < lock_wait => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(LabError::Busy {
                        dir: dir.to_path_buf(),
                        seconds: lock_wait.as_secs(),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    })?;
    // For people looking at the file: who holds it.
    let _ = file
        .set_len(0)
        .and_then(|_| writeln!(file, "{}", std::process::id()));
    Ok(LabLock { _file: file })
}
