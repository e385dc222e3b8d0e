"""Demo data: a long tool-using conversation written for this package's demo and examples.

A user and a coding assistant chase a failing nightly export in a small repository,
``shop-etl``, over 36 turns. Each turn is a user message, at most one tool call, and the
assistant's answer. The tools are real LangChain tools over a made-up repository, database and
log, with deterministic, offline results of a realistic size (a file, a test run, a page of
logs), so the context grows the way an agent's does and the demo's ToolNode runs them as it
would run any tool. Nothing here is copied from a public data set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool, tool

__all__ = ["DEMO_THREAD_ID", "DEMO_TOOLS", "DEMO_TURNS", "DemoTurn"]

DEMO_THREAD_ID = "shop-etl-nightly-export"


@dataclass(frozen=True)
class DemoTurn:
    """One user turn: what the user says, the tool the assistant calls, what it answers."""

    user: str
    answer: str
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


_FILES = {
    "etl/export_orders.py": [
        "import csv, datetime as dt",
        "from etl.db import connect",
        "from etl.currency import to_eur",
        "",
        "BATCH = 5_000",
        "",
        "def export_orders(day: dt.date, out_path: str) -> int:",
        "    conn = connect()",
        "    rows = conn.execute(",
        '        "SELECT id, customer_id, total, currency, created_at FROM orders "',
        '        "WHERE created_at >= ? AND created_at < ?",',
        "        (day, day + dt.timedelta(days=1)),",
        "    )",
        "    written = 0",
        '    with open(out_path, "w", newline="") as fh:',
        "        out = csv.writer(fh)",
        '        out.writerow(["id", "customer_id", "total_eur", "created_at"])',
        "        for order_id, customer, total, currency, created in rows:",
        "            out.writerow([order_id, customer, to_eur(total, currency), created])",
        "            written += 1",
        "    return written",
    ],
    "etl/currency.py": [
        "RATES = {'EUR': 1.0, 'USD': 0.92, 'GBP': 1.17, 'CHF': 1.04}",
        "",
        "def to_eur(amount: float, currency: str) -> float:",
        "    # KeyError for any currency missing from RATES (SEK since PR #418)",
        "    return round(amount * RATES[currency], 2)",
    ],
    "etl/db.py": [
        "import os, sqlite3",
        "",
        "def connect():",
        "    url = os.environ.get('SHOP_DB', '/srv/shop/shop.db')",
        "    conn = sqlite3.connect(url, timeout=30)",
        "    conn.execute('PRAGMA journal_mode=WAL')",
        "    return conn",
    ],
    "deploy/cron.yaml": [
        "jobs:",
        "  - name: nightly-orders-export",
        "    schedule: '15 2 * * *'   # 02:15 UTC",
        "    command: python -m etl.export_orders --day yesterday --out /exports/orders.csv",
        "    timeout_minutes: 20",
        "    alert: '#data-oncall'",
    ],
}


def _numbered(lines: list[str]) -> str:
    return "\n".join(f"{n:>4}  {line}" for n, line in enumerate(lines, start=1))


@tool
def read_file(path: str) -> str:
    """Read a file of the shop-etl repository, with line numbers."""
    lines = _FILES.get(path)
    if lines is None:
        return f"error: {path} not found; files: {', '.join(sorted(_FILES))}"
    return f"# {path} ({len(lines)} lines)\n{_numbered(lines)}"


@tool
def search_logs(query: str, day: str) -> str:
    """Search the job logs of one day (YYYY-MM-DD) for a text."""
    lines = []
    for n in range(14):
        stamp = f"{day}T02:{15 + n // 3:02d}:{(n * 7) % 60:02d}Z nightly-orders-export"
        lines.append(f"{stamp} batch={n + 1} rows={5000 - (n * 37) % 400} status=ok")
    lines.append(
        f"{day}T02:21:40Z nightly-orders-export ERROR KeyError: 'SEK' "
        "at etl/currency.py:5 in to_eur (order id 884213, customer 19207)"
    )
    lines.append(f"{day}T02:21:40Z nightly-orders-export exit=1 written=68112 expected~71000")
    hits = [line for line in lines if query.lower() in line.lower()] or lines
    return f"{len(hits)} matching lines for {query!r} on {day}:\n" + "\n".join(hits)


@tool
def query_db(sql: str) -> str:
    """Run a read-only SQL query against the shop database replica."""
    if "currency" in sql.lower():
        counts = {"EUR": 51210, "USD": 9433, "GBP": 6120, "CHF": 1349, "SEK": 2871}
        rows = [f"{code:<4} | {count:>6}" for code, count in counts.items()]
        return "currency | orders (last 24h)\n" + "\n".join(rows)
    rows = [
        f"{884200 + n} | {19000 + n * 13} | {round(20 + n * 7.31, 2):>7} | "
        f"{('EUR', 'SEK', 'USD', 'GBP')[n % 4]} | 2025-03-1{n % 3 + 2}T0{n % 9}:12:00Z"
        for n in range(10)
    ]
    return "id | customer_id | total | currency | created_at\n" + "\n".join(rows)


@tool
def run_tests(target: str) -> str:
    """Run the repository's pytest suite (or a part of it) and return the report."""
    names = [
        "test_to_eur_known_currencies",
        "test_to_eur_rounds_to_cents",
        "test_to_eur_unknown_currency_raises_clear_error",
        "test_export_writes_header",
        "test_export_counts_rows",
        "test_export_skips_cancelled_orders",
        "test_export_handles_sek",
        "test_cron_schedule_is_utc",
    ]
    fixed = "sek" in target.lower() or "after" in target.lower()
    report = ["platform linux -- Python 3.11.7, pytest-8.3.4", "collected 8 items", ""]
    for n, name in enumerate(names):
        failed = not fixed and name == "test_export_handles_sek"
        outcome = "FAILED" if failed else "PASSED"
        report.append(f"tests/test_export.py::{name} {outcome} [{(n + 1) * 100 // 8:>3}%]")
    summary = "8 passed" if fixed else "1 failed, 7 passed"
    detail = "" if fixed else _SEK_FAILURE
    return f"$ pytest {target}\n" + "\n".join(report) + detail + f"\n=== {summary} in 1.84s ==="


_SEK_FAILURE = """
=================================== FAILURES ===================================
___________________________ test_export_handles_sek ____________________________
    def test_export_handles_sek(tmp_path, orders_db):
        orders_db.add(id=1, customer_id=7, total=100.00, currency="SEK")
>       export_orders(DAY, str(tmp_path / "orders.csv"))
tests/test_export.py:88:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
etl/export_orders.py:19: in export_orders
    out.writerow([order_id, customer, to_eur(total, currency), created])
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
amount = 100.0, currency = 'SEK'
    def to_eur(amount: float, currency: str) -> float:
>       return round(amount * RATES[currency], 2)
E       KeyError: 'SEK'
etl/currency.py:5: KeyError
=========================== short test summary info ============================
FAILED tests/test_export.py::test_export_handles_sek - KeyError: 'SEK'"""

DEMO_TOOLS: list[BaseTool] = [read_file, search_logs, query_db, run_tests]

_T = DemoTurn
DEMO_TURNS: tuple[DemoTurn, ...] = (
    _T(
        "Hi! Our nightly orders export (job nightly-orders-export in shop-etl) failed last night "
        "and finance needs the file by 9:00. Can you help me find out why?",
        "Of course. I'll start with the job's logs from last night, then read the code it runs.",
    ),
    _T(
        "Last night was 2025-03-14. Please look at the logs.",
        "The job ran 14 batches fine, then died at 02:21:40 UTC with KeyError: 'SEK' in "
        "etl/currency.py:5 (to_eur), on order 884213 of customer 19207. It wrote 68,112 rows "
        "of about 71,000 expected, so the file is incomplete.",
        "search_logs",
        {"query": "nightly-orders-export", "day": "2025-03-14"},
    ),
    _T(
        "KeyError on SEK? We started selling in Sweden this week. Show me the currency code.",
        "etl/currency.py has a fixed RATES table with EUR, USD, GBP and CHF only. to_eur looks "
        "the currency up directly, so any new currency (SEK since PR #418) raises KeyError.",
        "read_file",
        {"path": "etl/currency.py"},
    ),
    _T(
        "How many SEK orders are we talking about?",
        "2,871 SEK orders in the last 24 hours, out of 70,983 in total; EUR is the bulk with "
        "51,210. So about 4% of yesterday's orders cannot be converted today.",
        "query_db",
        {"sql": "SELECT currency, count(*) FROM orders GROUP BY currency"},
    ),
    _T(
        "And the export itself, how does it call to_eur?",
        "etl/export_orders.py streams the day's orders and calls to_eur(total, currency) for "
        "each row inside the csv loop (line 19). One bad row aborts the whole file, and rows "
        "already written stay on disk as a partial /exports/orders.csv.",
        "read_file",
        {"path": "etl/export_orders.py"},
    ),
    _T(
        "Finance reads that file at 9:00. A partial file is worse than no file, right?",
        "Yes: a partial file looks valid and under-reports revenue. Two fixes are needed: add "
        "SEK to the rates, and write to a temporary file that is renamed only on success.",
    ),
    _T(
        "Where do the rates come from anyway? I thought we had a rates service.",
        "In this repository they are hard-coded in etl/currency.py. If there is a rates "
        "service, the code does not use it; I would ask the payments team before relying on it.",
    ),
    _T(
        "Let's keep it simple for tonight: hard-code SEK at 0.088. Constraint: no new "
        "dependencies, and the change must go through the usual PR review.",
        "Noted: SEK = 0.088 EUR, hard-coded, no new dependencies, via a normal PR. I'll also "
        "make to_eur raise a clear error naming the currency instead of a bare KeyError.",
    ),
    _T(
        "Run the tests first so we see the current state.",
        "As expected: 7 passed, 1 failed. test_export_handles_sek fails with KeyError: 'SEK' at "
        "etl/currency.py:5. Everything else is green.",
        "run_tests",
        {"target": "tests/test_export.py"},
    ),
    _T(
        "What does the test for SEK actually check?",
        "It exports a day with one SEK order of 100.00 and expects total_eur 8.8 in the CSV. "
        "It was added with PR #418 but marked as expected-to-fail, so CI did not block it.",
    ),
    _T(
        "Ugh, the xfail. Remove that marker as part of the fix.",
        "Will do: the fix removes the xfail marker from test_export_handles_sek so it guards "
        "the SEK path from now on.",
    ),
    _T(
        "Also check the cron config, I want to know when the rerun would finish.",
        "deploy/cron.yaml runs nightly-orders-export at 02:15 UTC with a 20 minute timeout "
        "and alerts #data-oncall. A manual rerun takes about 7 minutes for a full day.",
        "read_file",
        {"path": "deploy/cron.yaml"},
    ),
    _T(
        "Is the schedule really UTC? Our finance team is in Zurich.",
        "Yes, '15 2 * * *' in UTC is 03:15 in Zurich in winter. test_cron_schedule_is_utc "
        "asserts it, so the file lands long before 9:00 local time.",
    ),
    _T(
        "Let me see a sample of yesterday's orders, including SEK ones.",
        "Here is a sample of 10 orders from 884200 on; every fourth one is SEK. Totals look "
        "like normal basket sizes, nothing suspicious in the data itself.",
        "query_db",
        {"sql": "SELECT * FROM orders WHERE id >= 884200 LIMIT 10"},
    ),
    _T(
        "OK. Write the change to currency.py: SEK rate plus the clearer error.",
        "Proposed etl/currency.py: RATES gains 'SEK': 0.088, and to_eur raises "
        "UnknownCurrencyError('no EUR rate for SEK; add it to etl/currency.py RATES') when a "
        "code is missing. The error class subclasses KeyError so callers keep working.",
    ),
    _T(
        "And the atomic write in export_orders.py?",
        "export_orders now writes to out_path + '.tmp' and calls os.replace(tmp, out_path) "
        "only after the last row, so finance sees yesterday's complete file or the previous "
        "one, never a partial file.",
    ),
    _T(
        "Run the tests again with the fix applied.",
        "All 8 passed in 1.84s, including test_export_handles_sek without its xfail marker.",
        "run_tests",
        {"target": "tests/test_export.py --after-sek-fix"},
    ),
    _T(
        "Great. Is there a test for the atomic write?",
        "Not yet. I suggest test_export_failure_keeps_previous_file: make to_eur fail on the "
        "third row and assert /exports/orders.csv still holds the previous content.",
    ),
    _T(
        "Add it. What else could break the same way?",
        "Anything new in orders.currency. A guard would be a check at the start of the job "
        "that every currency of the day has a rate, failing fast before writing anything.",
    ),
    _T(
        "Let's look at the logs for the night before, was anything odd there?",
        "2025-03-13 ran clean: 14 batches, no errors, exit 0. The first SEK order arrived on "
        "the 14th, which matches the first failure.",
        "search_logs",
        {"query": "nightly-orders-export", "day": "2025-03-13"},
    ),
    _T(
        "Good. Draft the PR description please.",
        "Title: 'Add SEK rate, fail clearly on unknown currencies, write the export atomically'. "
        "Body: cause (KeyError 'SEK' since PR #418), fix (SEK 0.088, UnknownCurrencyError, "
        "tmp file + os.replace), tests (SEK xfail removed, new atomic-write test), rerun plan.",
    ),
    _T(
        "Who should review it?",
        "Someone from the data team for the export, and payments for the SEK rate; the "
        "CODEOWNERS file is not in what I have read, so please pick the names.",
    ),
    _T(
        "I'll ask Priya from payments. Meanwhile, how do we rerun for the 14th?",
        "After the merge: python -m etl.export_orders --day 2025-03-14 --out "
        "/exports/orders.csv. It takes about 7 minutes; then check the row count against the "
        "database (70,983).",
    ),
    _T(
        "Check how many rows the database has for the 14th to be sure.",
        "The replica reports the same split as before: 70,983 orders on 2025-03-14, of which "
        "2,871 in SEK. The rerun must write exactly that many rows.",
        "query_db",
        {"sql": "SELECT currency, count(*) FROM orders WHERE day = '2025-03-14'"},
    ),
    _T(
        "Priya says the SEK rate should be 0.087, not 0.088. Update please.",
        "Updated: RATES['SEK'] = 0.087 and the SEK test now expects 8.7 for 100.00 SEK. The "
        "decision is recorded in the PR description, with Priya as the source.",
    ),
    _T(
        "Run the tests one more time.",
        "Still green: 8 passed in 1.84s.",
        "run_tests",
        {"target": "tests/ --after-sek-fix"},
    ),
    _T(
        "The PR is merged. Let me know what the rerun should log when it is done.",
        "A clean run logs 15 batches with status=ok and a final line with exit=0 and "
        "written=70983. Anything else, or a missing final line, means it did not finish.",
    ),
    _T(
        "Here's what the rerun logged, can you check it? Search for 'exit' on 2025-03-15.",
        "The search shows the same batches and the old error line: that is still the failed "
        "run from the night of the 14th. The manual rerun has not logged yet; let's wait.",
        "search_logs",
        {"query": "exit", "day": "2025-03-15"},
    ),
    _T(
        "Right, it's still running. While we wait: should the fail-fast currency guard go in "
        "this PR too?",
        "I'd make it a follow-up: this PR is reviewed and merged, and the guard changes when the "
        "job fails, which on-call should know about first.",
    ),
    _T(
        "Agreed, follow-up ticket then. Call it ETL-212.",
        "ETL-212: 'Fail fast when a day's orders use a currency without a rate'. Acceptance: the "
        "job checks currencies before writing, and the error names the missing codes.",
    ),
    _T(
        "The rerun finished: written=70983, exit 0. Is the file complete?",
        "Yes: 70,983 rows is exactly the database count for 2025-03-14, SEK included, and exit "
        "0 means the atomic rename happened. Finance can use /exports/orders.csv.",
    ),
    _T(
        "Please write a short note for #data-oncall about what happened.",
        "'The 2025-03-14 nightly-orders-export failed on KeyError SEK (new currency, PR #418). "
        "Fixed by adding SEK at 0.087 (confirmed by Priya, payments) and writing the file "
        "atomically; rerun complete with 70,983 rows. Follow-up: ETL-212.'",
    ),
    _T(
        "Should the note mention the partial file?",
        "Yes, one line: 'finance briefly had a partial file (68,112 rows) before 9:00; it has "
        "been replaced'. Anyone who opened it early should re-download.",
    ),
    _T(
        "Good. Anything we should double-check tomorrow morning?",
        "That the 02:15 UTC run of 2025-03-15 exits 0 with written equal to the database count, "
        "and that no .tmp file is left in /exports.",
    ),
    _T(
        "Thanks. Last thing: summarize the decisions we made today in three bullets.",
        "- SEK is converted at 0.087 EUR (Priya, payments), hard-coded, no new dependency.\n"
        "- The export writes a temp file and renames it, so a failure never leaves a partial "
        "file.\n- Fail-fast currency checks are follow-up ETL-212.",
    ),
    _T(
        "Perfect, that's all for today.",
        "Glad it's fixed before 9:00. I'll keep ETL-212 and tomorrow's check on the list.",
    ),
)
