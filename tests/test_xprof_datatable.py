"""DataTables whose rows are numpy columns (datatable.Rows) are written exactly as json.dumps writes the same
table with a dict per row: what XProf's front ends and scripts read does not depend on how a tool held it."""

import json

import numpy as np

from profscope.models.analysis.xprof.datatable import JsonList, Rows, column, dumps, table, to_json


def _as_dicts(names, numbers, flags, p):
    rows = [[n, x, f] for n, x, f in zip(names, numbers.tolist(), flags)]
    return table([column("name", "string", "Name"), column("x", "number", "X"), column("f", "boolean", "F")],
                 rows, p)


def test_rows_from_columns_are_json_dumps_text():
    n = 20_000  # more than one chunk of rows
    names = [f"op.{i % 7} µs \"quoted\" <b>" for i in range(n)]
    numbers = np.linspace(-1e300, 1e-300, n)
    numbers[:4] = [np.nan, np.inf, -np.inf, 0.1 + 0.2]
    flags = [i % 3 == 0 for i in range(n)]
    p = {"note": "a cell may look like a placeholder"}
    names[5] = '"rows0"'
    cols = _as_dicts(names, numbers, flags, p)["cols"]
    columnar = table(cols, Rows([names, numbers, flags]), p)
    plain = _as_dicts(names, numbers, flags, p)
    assert b"".join(dumps([columnar, {}])) == json.dumps(
        [plain, {}], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert b"".join(to_json(columnar)) == json.dumps(plain, separators=(",", ":")).encode()


def test_coded_columns_and_lists_of_items():
    ids = np.array([2, 0, 1, 1])
    rows = Rows([(ids, ["a", "b", "ç"]), (np.zeros(4, np.int64), [True])])
    expected = [["ç", True], ["a", True], ["b", True], ["b", True]]
    got = json.loads(b"".join(to_json({"rows": rows})))
    assert [[c["v"] for c in r["c"]] for r in got["rows"]] == expected
    items = JsonList([b'{"id":"', b'"}'], [("i", np.arange(3))], 3, b'{"id":"index"}')
    assert json.loads(b"".join(to_json({"cols": items}))) == {"cols": [{"id": "index"}, {"id": "0"}, {"id": "1"},
                                                                      {"id": "2"}]}
    empty = JsonList([b'{"v":"', b'"}'], [("i", np.arange(0))], 0)
    assert b"".join(to_json([empty])) == b"[[]]"
