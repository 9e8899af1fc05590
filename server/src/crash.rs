//! Deliberate crashes for the kill-and-restart tests: a named point in a stream where the process
//! aborts, as a power cut would stop it. Off unless the hidden `--crash-at` option names a point.

use std::fmt;
use std::str::FromStr;

/// A stream and a moment in its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashPoint {
    /// The flow: `bronze`, `silver`, `gold`, or a pipeline's flow (a table's own flow has its name).
    pub stream: String,
    /// When in the run to abort.
    pub moment: Moment,
}

/// The moments a stream run can be cut at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// The new input is read; nothing is written yet.
    AfterRead,
    /// Data files (and gold's state) are written; the Delta commit is not.
    AfterWrite,
    /// The Delta commit is done; the run has not reported yet.
    AfterCommit,
}

impl CrashPoint {
    /// Aborts the process if `point` is this stream at this moment.
    pub fn abort_if(point: Option<&CrashPoint>, stream: &str, moment: Moment) {
        if let Some(p) = point
            && p.stream == stream
            && p.moment == moment
        {
            eprintln!("crash point {p} reached: aborting");
            std::process::abort();
        }
    }
}

impl fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moment = match self.moment {
            Moment::AfterRead => "after-read",
            Moment::AfterWrite => "after-write",
            Moment::AfterCommit => "after-commit",
        };
        write!(f, "{}:{moment}", self.stream)
    }
}

impl FromStr for CrashPoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (stream, moment) = s
            .split_once(':')
            .ok_or_else(|| format!("crash-at: expected STREAM:MOMENT, got {s:?}"))?;
        if stream.is_empty() {
            return Err(format!("crash-at: expected STREAM:MOMENT, got {s:?}"));
        }
        let stream = stream.to_string();
        let moment = match moment {
            "after-read" => Moment::AfterRead,
            "after-write" => Moment::AfterWrite,
            "after-commit" => Moment::AfterCommit,
            other => return Err(format!("crash-at: unknown moment {other:?}")),
        };
        Ok(Self { stream, moment })
    }
}
