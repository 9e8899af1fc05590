"""Draws the side-by-side benchmark's chart from its figures (written by `make bench`).

    python3 bench/chart.py bench/side_by_side.json bench/side_by_side.svg

Left: events per second per stage, Reckon beside Spark, with the machine's limits as lines.
Right: a 10-event run's latency. Both on log scales: the sides differ by orders of magnitude.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source, target):
    with open(source) as f:
        figures = json.load(f)
    stages = figures["stages"]
    fig, (rates, latency) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})

    xs = range(len(stages))
    width = 0.38
    rates.bar([x - width / 2 for x in xs], figures["reckon_rates"], width, label="Reckon", color="#2f6f4f")
    rates.bar([x + width / 2 for x in xs], figures["spark_rates"], width, label="Spark (warm session)", color="#c4622d")
    rates.axhline(figures["raw_consume_rate"], color="#555", linestyle="--", linewidth=1, label="raw Kafka consume")
    rates.axhline(figures["parquet_write_rate"], color="#999", linestyle=":", linewidth=1, label="Parquet write")
    rates.set_xticks(list(xs), stages)
    rates.set_yscale("log")
    rates.set_ylabel("events per second (log)")
    rates.set_title(f"Throughput over {figures['events']:,} events in {figures['sends']} sends")
    rates.legend(fontsize=8)

    small = figures["small_run_ms"]
    names = ["Reckon", "Spark warm", "Spark as the seed\n(process per stream)"]
    values = [small["reckon"] / 1000, small["spark_warm"] / 1000, small["spark_cold"] / 1000]
    bars = latency.bar(names, values, color=["#2f6f4f", "#c4622d", "#8a3b17"])
    for bar, value in zip(bars, values):
        latency.annotate(f"{value:.2f} s", (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom", fontsize=8)
    latency.set_yscale("log")
    latency.set_ylabel("seconds (log), median")
    latency.set_title("A 10-event run: 3 streams + check")
    latency.tick_params(axis="x", labelsize=8)

    fig.tight_layout()
    fig.savefig(target)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
