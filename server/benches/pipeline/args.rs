//! The bench's command line.

pub struct Args {
    pub events: usize,
    pub sends: usize,
    pub spark: bool,
    pub small_runs: usize,
    pub cold_runs: usize,
    /// Leave the bench's folder (tables, state) in place, to look at afterwards.
    pub keep: bool,
    /// Warm the broker up before anything is timed (`warm.rs`); `--no-warm-up` leaves it cold.
    pub warm_up: bool,
}

pub fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        events: std::env::var("RECKON_BENCH_EVENTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000_000),
        sends: 20,
        spark: true,
        small_runs: 10,
        cold_runs: 3,
        keep: false,
        warm_up: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> anyhow::Result<usize> {
            let value = it.next().unwrap_or_default();
            value
                .replace('_', "")
                .parse()
                .map_err(|_| anyhow::anyhow!("{name}: expected a whole number, got {value:?}"))
        };
        match arg.as_str() {
            "--events" => args.events = number("--events")?,
            "--sends" => args.sends = number("--sends")?,
            "--cold-runs" => args.cold_runs = number("--cold-runs")?,
            "--no-spark" => args.spark = false,
            "--keep" => args.keep = true,
            "--no-warm-up" => args.warm_up = false,
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    if args.events < 100 * args.sends {
        anyhow::bail!("--events: at least 100 per send");
    }
    args.spark = args.spark && reckon::bench::peer("spark", reckon::bench::spark_installed());
    Ok(args)
}
