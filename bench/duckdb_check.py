"""The check's full recount run by DuckDB: the same two queries (each order's newest event
against `orders`; distinct placed events per hour against `hourly_sales`) on the same Parquet
files, as the limit a user would otherwise pick.

    duckdb_check.py INPUT.json

INPUT names each table's live Parquet files and the two queries' SQL:
{"tables": {"bronze_orders": [...], "orders": [...], "hourly_sales": [...]},
 "queries": {"silver": "...", "hours": "..."}}

Prints JSON: seconds (the two queries, Parquet reads included), the order ids that differ, and
the hour rows. One word of dialect differs: DataFusion's ordered aggregate `first_value(x ORDER BY
...)` is DuckDB's `first(x ORDER BY ...)` (both keep the first row's value, NULL or not).
"""

import json
import re
import sys
import time

import duckdb


def duckdb_dialect(sql):
    return re.sub(r"\bfirst_value\(", "first(", sql)


def main():
    spec = json.load(open(sys.argv[1]))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for name, files in spec["tables"].items():
        if not files:
            sys.exit(f"duckdb_check.py: table {name} has no files")
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{listed}])")
    queries = {name: duckdb_dialect(sql) for name, sql in spec["queries"].items()}
    started = time.perf_counter()
    differing = [row[0] for row in con.execute(queries["silver"]).fetchall()]
    hours = con.execute(queries["hours"]).fetchall()
    seconds = time.perf_counter() - started
    print(json.dumps({
        "seconds": seconds,
        "differing": differing,
        "hours": [[str(h[0]), h[1], str(h[2]), h[3], h[4], str(h[5])] for h in hours],
    }))


if __name__ == "__main__":
    main()
