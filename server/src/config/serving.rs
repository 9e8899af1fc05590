//! How a server serves its labs: who may do what, how many runs at once, what a run's process may
//! take, and how fast writes may come. A section of [`Config`](super::Config), filled by
//! `reckon serve` and checked before anything starts.

use std::time::Duration;

use super::{ConfigError, invalid};
use crate::limit::Rate;

/// The server's part of the config.
#[derive(Clone)]
pub struct Serving {
    /// The instructor's token; `None`: a single-user server that asks for no token.
    pub instructor_token: Option<String>,
    /// Pipeline runs at once across all labs.
    pub max_runs: usize,
    /// What each run's process may take (memory, CPU and wall time, open files).
    pub run_limits: RunLimits,
    /// The rates every write is held to.
    pub rates: Rates,
}

/// Never shows the token: a `{:?}` of the config must not put it in a log.
impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field(
                "instructor_token",
                &self.instructor_token.as_ref().map(|_| "<set>"),
            )
            .field("max_runs", &self.max_runs)
            .field("run_limits", &self.run_limits)
            .field("rates", &self.rates)
            .finish()
    }
}

impl Default for Serving {
    fn default() -> Self {
        Self {
            instructor_token: None,
            max_runs: 4,
            run_limits: RunLimits::DEFAULT,
            rates: Rates::default(),
        }
    }
}

/// The least length of an instructor's token: it cannot be guessed.
pub const LEAST_TOKEN: usize = 16;

impl Serving {
    /// Checks what a server cannot run with, naming the setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self
            .instructor_token
            .as_ref()
            .is_some_and(|t| t.len() < LEAST_TOKEN)
        {
            return Err(invalid(
                "instructor-token",
                format!("at least {LEAST_TOKEN} characters, so it cannot be guessed"),
            ));
        }
        if self.max_runs == 0 {
            return Err(invalid("max-runs", "at least 1"));
        }
        let sends = self.rates.sends;
        if sends.burst == 0 {
            return Err(invalid("produce-burst", "above 0"));
        }
        if !(sends.per_second > 0.0 && sends.per_second.is_finite()) {
            return Err(invalid(
                "produce-rate",
                format!("above 0, got {}", sends.per_second),
            ));
        }
        Ok(())
    }
}

/// What a run's process may take.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    /// Resident memory (bytes), polled; past it the child is killed.
    pub resident: u64,
    /// Private writable memory it may map (`RLIMIT_DATA`), reservations and stacks included.
    pub data: u64,
    /// CPU seconds (`RLIMIT_CPU`), all threads together.
    pub cpu_seconds: u64,
    /// Wall time; past it the child is killed.
    pub wall: Duration,
    /// Open files (`RLIMIT_NOFILE`).
    pub files: u64,
}

impl RunLimits {
    pub const DEFAULT: RunLimits = RunLimits {
        resident: 2 << 30,
        // jemalloc's arenas, the run's 512 MiB stack and tokio's threads reserve more than they
        // use: 16 GiB of mappings for 2 GiB resident leaves them room.
        data: 16 << 30,
        cpu_seconds: 900,
        wall: Duration::from_secs(300),
        files: 4096,
    };
}

/// The rates every write is held to.
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    /// Sends (the API's produce, the produce forms) per client and lab.
    pub sends: Rate,
    /// Any write per client (its verified token or session, else its address).
    pub writes: Rate,
    /// Sign-in attempts per address.
    pub sign_ins: Rate,
    /// Requests with a token this server has not verified yet, per address: guesses of the
    /// instructor's or a lab's token are slowed, and each lab token guessed costs an argon2.
    pub guesses: Rate,
}

impl Default for Rates {
    /// Generous for a person clicking and for the course's scripts; a runaway loop is slowed.
    fn default() -> Self {
        Self {
            sends: Rate {
                burst: 50,
                per_second: 20.0,
            },
            writes: Rate {
                burst: 120,
                per_second: 20.0,
            },
            sign_ins: Rate {
                burst: 10,
                per_second: 0.2,
            },
            guesses: Rate {
                burst: 30,
                per_second: 0.5,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_token_no_runs_and_no_sends_are_refused_by_name() {
        assert!(Serving::default().validate().is_ok());
        let short = Serving {
            instructor_token: Some("short".into()),
            ..Default::default()
        };
        assert_eq!(short.validate().unwrap_err().field, "instructor-token");
        let none = Serving {
            max_runs: 0,
            ..Default::default()
        };
        assert_eq!(none.validate().unwrap_err().field, "max-runs");
        let mut still = Serving::default();
        still.rates.sends.per_second = 0.0;
        assert_eq!(still.validate().unwrap_err().field, "produce-rate");
        assert!(
            !format!(
                "{:?}",
                Serving {
                    instructor_token: Some("x".repeat(20)),
                    ..Default::default()
                }
            )
            .contains("xxxx")
        );
    }
}
