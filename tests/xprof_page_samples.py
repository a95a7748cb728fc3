"""Tool output in XProf's layouts with rows, for the pages' tests and renders: the
fixtures (CPU profiles) give XProf's empty tables, so the pages' tables, trees and
charts are also shown a few rows written in the same layout (the widget's input,
not a file format)."""

import json

from conftest import DATA

TOOLS = DATA / "xprof" / "tools"


def fixture_output(name: str):
    return json.loads((TOOLS / name).read_text())


def cells(*values):
    return {"c": [{"v": v} for v in values]}


def hlo_stats_sample() -> dict:
    table = fixture_output("jaxprog.hlo_stats.json")
    ids = [c["id"] for c in table["cols"]]

    def row(rank, category, name, framework, occurrences, total, self_time, percent):
        values = dict.fromkeys(ids, 0)
        values.update(
            rank=rank,
            program_id="16",
            category=category,
            hlo_op_name=name,
            hlo_op_expression=name,
            tf_op_name=framework,
            occurrences=occurrences,
            total_time=total,
            total_self_time=self_time,
            total_self_time_percent=percent,
            bound_by="HBM",
            include_infeed_outfeed=True,
        )
        for key in (
            "hlo_rematerialization",
            "outside_compilation",
            "autotuned",
            "source_info",
            "core_type",
            "parent_op_name",
        ):
            values[key] = ""
        return cells(*(values[i] for i in ids))

    table["rows"] = [
        row(1, "convolution", "conv.1", "jit(f)/conv", 4, 120.0, 100.0, 62.5),
        row(2, "loop fusion", "fusion.3", "jit(f)/relu", 4, 40.0, 40.0, 25.0),
        row(3, "data formatting", "copy.2", "jit(f)/copy", 8, 20.0, 20.0, 12.5),
    ]
    return table


def roofline_sample() -> list:
    tables = fixture_output("jaxprog.roofline_model.json")
    table = tables[0]
    ids = [c["id"] for c in table["cols"]]

    def row(name, intensity, rate, self_time):
        values = {
            i: (0 if c["type"] == "number" else False if c["type"] == "boolean" else "")
            for i, c in zip(ids, table["cols"])
        }
        values.update(
            step="Total",
            category="fusion",
            operation=name,
            operational_intensity=intensity,
            measured_flop_rate=rate,
            total_self_time=self_time,
            bound_by="HBM",
            include_infeed_outfeed=True,
        )
        return cells(*(values[i] for i in ids))

    table["rows"] = [row("conv.1", 40.0, 9000.0, 100.0), row("fusion.3", 0.5, 300.0, 40.0)]
    table["p"].update(peak_flop_rate="19500", peak_hbm_bw="1500", hbm_ridge_point="12.1", device_type="GPU")
    return tables
