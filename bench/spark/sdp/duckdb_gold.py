"""Week 14's gold view computed by DuckDB straight from the landed JSON files, as a baseline.

    duckdb_gold.py LANDING [GOLD_FILE]

Same rows as Reckon's and Spark's gold_daily_account_status: the first row per ticket_id (files in
name order, i.e. by day; copies of a ticket are identical), rows with an invalid status dropped,
counted per ticket_date, account_id, status. Prints {"seconds": query time, "rows": n, "gold":
[[ticket_date, account_id, status, count], ...]} sorted by all four columns, like run.sh.
"""

import sys
import time

import duckdb

from spark_gold import print_gold

QUERY = """
WITH landed AS (
  SELECT * FROM read_json($files, format = 'newline_delimited', filename = true, columns = {
    ticket_id: 'BIGINT', account_id: 'VARCHAR', created_at: 'VARCHAR', status: 'VARCHAR',
    first_response_s: 'BIGINT'})
), first AS (
  SELECT DISTINCT ON (ticket_id) * FROM landed ORDER BY ticket_id, filename
)
SELECT strftime(CAST(left(created_at, 10) AS DATE), '%Y-%m-%d') AS ticket_date, account_id, status,
       count(*) AS count
FROM first
WHERE status IN ('open', 'pending', 'resolved', 'escalated', 'closed')
GROUP BY ALL ORDER BY ALL
"""


def main():
    files = f"{sys.argv[1].rstrip('/')}/*.json"
    con = duckdb.connect()
    start = time.perf_counter()
    rows = con.execute(QUERY, {"files": files}).fetchall()
    seconds = time.perf_counter() - start
    print_gold(round(seconds, 3), [list(r) for r in rows], sys.argv[2] if len(sys.argv) > 2 else None)


if __name__ == "__main__":
    main()
