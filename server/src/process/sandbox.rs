//! What a run's process may reach on the network: with Linux's Landlock (ABI 4 and later, kernel
//! 6.7+), TCP connections only to the given ports (its lab's brokers) and no TCP listening at
//! all. Applied to the calling thread and every thread it starts afterwards, so a process applies
//! it first, before it starts any. A kernel without Landlock's network rules runs the process
//! unrestricted, and says so ([`Sandbox::NotEnforced`]); the process's other limits still hold.

use landlock::{
    ABI, Access, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus,
};

/// How the restriction held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sandbox {
    /// Only the ports given may be connected to, and nothing may listen.
    Enforced,
    /// This kernel has no Landlock network rules: unrestricted.
    NotEnforced,
}

impl std::fmt::Display for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sandbox::Enforced => "network limited to the lab's brokers by Landlock",
            Sandbox::NotEnforced => "no Landlock network rules on this kernel: network not limited",
        })
    }
}

/// Restricts this thread, and the threads it starts from now on, to TCP connections to `ports`
/// and no TCP listening.
pub fn connect_only_to(ports: &[u16]) -> Result<Sandbox, String> {
    let access = AccessNet::from_all(ABI::V4);
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(access)
        .map_err(|e| e.to_string())?
        .create()
        .map_err(|e| e.to_string())?;
    let rules = ports
        .iter()
        .map(|port| Ok::<_, landlock::RulesetError>(NetPort::new(*port, AccessNet::ConnectTcp)));
    let status = ruleset
        .add_rules(rules)
        .map_err(|e| e.to_string())?
        .restrict_self()
        .map_err(|e| e.to_string())?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Sandbox::Enforced,
        RulesetStatus::NotEnforced => Sandbox::NotEnforced,
    })
}

/// The ports of a list of brokers, `host:port,host:port` (a broker without a port is Kafka's
/// 9092).
pub fn broker_ports(brokers: &str) -> Vec<u16> {
    brokers
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(|b| {
            b.rsplit_once(':')
                .and_then(|(_, port)| port.parse().ok())
                .unwrap_or(9092)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn a_restricted_thread_connects_to_its_ports_only_and_listens_on_none() {
        let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let (allowed_port, other_port) = (
            allowed.local_addr().unwrap().port(),
            other.local_addr().unwrap().port(),
        );
        // On a thread of its own: the restriction stays with it (and the threads it starts).
        let seen = std::thread::spawn(move || {
            let sandbox = connect_only_to(&[allowed_port]).unwrap();
            let to = |port: u16| TcpStream::connect(("127.0.0.1", port)).map(|_| ());
            let listen = TcpListener::bind("127.0.0.1:0").map(|_| ());
            let child = std::thread::spawn(move || {
                TcpStream::connect(("127.0.0.1", other_port)).map(|_| ())
            })
            .join()
            .unwrap();
            (sandbox, to(allowed_port), to(other_port), listen, child)
        })
        .join()
        .unwrap();
        let (sandbox, allowed, other, listen, child) = seen;
        assert!(allowed.is_ok(), "{allowed:?}");
        match sandbox {
            Sandbox::Enforced => {
                for refused in [other, listen, child] {
                    let e = refused.expect_err("refused by Landlock");
                    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
                }
            }
            // A kernel without the rules: nothing to show but that it says so.
            Sandbox::NotEnforced => eprintln!("{sandbox}"),
        }
        // This thread was never restricted.
        assert!(TcpStream::connect(("127.0.0.1", other_port)).is_ok());
    }

    #[test]
    fn broker_ports_are_read_from_the_list() {
        assert_eq!(
            broker_ports("127.0.0.1:9092, kafka-1:19092,kafka-2"),
            [9092, 19092, 9092]
        );
    }
}
