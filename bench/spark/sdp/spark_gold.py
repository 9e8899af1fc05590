"""Spark's gold_daily_account_status as run.sh prints it, read without a Spark session.

    spark_gold.py STORAGE SECONDS [GOLD_FILE]

Replays the Delta log of STORAGE/spark-warehouse/gold_daily_account_status (its live files: every
`add` not later `remove`d), reads them with DuckDB, and prints one JSON line: {"seconds": SECONDS,
"rows": n, "gold": [[ticket_date, account_id, status, count], ...]} sorted by all four columns,
or with "gold_file" instead of "gold" when GOLD_FILE is given (the rows go there as a JSON array).
"""

import json
import sys
from pathlib import Path
from urllib.parse import unquote

import duckdb


def live_files(table):
    files = set()
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                files.add(unquote(action["add"]["path"]))
            elif "remove" in action:
                files.discard(unquote(action["remove"]["path"]))
    return sorted(str(table / f) for f in files)


def print_gold(seconds, rows, gold_file=None):
    out = {"seconds": seconds, "rows": len(rows)}
    if gold_file:
        Path(gold_file).write_text(json.dumps(rows))
        out["gold_file"] = gold_file
    else:
        out["gold"] = rows
    print(json.dumps(out))


def main():
    storage, seconds = Path(sys.argv[1]), float(sys.argv[2])
    files = live_files(storage / "spark-warehouse" / "gold_daily_account_status")
    rows = duckdb.sql(
        "SELECT strftime(ticket_date, '%Y-%m-%d'), account_id, status, count FROM read_parquet($f)"
        " ORDER BY ALL",
        params={"f": files},
    ).fetchall() if files else []
    print_gold(seconds, [list(r) for r in rows], sys.argv[3] if len(sys.argv) > 3 else None)


if __name__ == "__main__":
    main()
