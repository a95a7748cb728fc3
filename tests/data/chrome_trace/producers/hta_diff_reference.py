"""HolisticTraceAnalysis's TraceDiff.compare_traces of ../diff_pair (baseline = control,
candidate = test), written to ../diff_pair/hta_trace_diff.json.

    pip install HolisticTraceAnalysis==0.5.0
    python producers/hta_diff_reference.py

Per iteration HTA analyses with its default include_last_profiler_step=False (every
ProfilerStep but the last: #2 and #3), compare_traces(control, test,
control_iteration=[k], test_iteration=[k], device_type=CPU and GPU). HTA groups by
name over every category; each row also lists the categories HTA's get_ops_summary
found for the name on either side, so a test can pick the cpu_op rows.
Durations are HTA's: whole microseconds (start rounded up, end down).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAIR = os.path.join(HERE, "..", "diff_pair")


def main():
    import hta
    from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff

    control = LabeledTrace(label="control", trace_dir=os.path.join(PAIR, "baseline"))
    test = LabeledTrace(label="test", trace_dir=os.path.join(PAIR, "candidate"))
    iterations = sorted(set(control.iterations()) & set(test.iterations()))[:-1]
    out = {"produced_by": "producers/hta_diff_reference.py", "hta_version": hta.__version__ if hasattr(hta, "__version__")
           else __import__("importlib.metadata").metadata.version("HolisticTraceAnalysis"),
           "call": "TraceDiff.compare_traces(control, test, control_iteration=[k], test_iteration=[k], device_type=D)",
           "units": "microseconds, HTA's grid (ts rounded up, ts + dur rounded down)", "iterations": {}}
    for k in iterations:
        entry = {}
        for device in (DeviceType.CPU, DeviceType.GPU):
            comp = TraceDiff.compare_traces(control, test, control_iteration=[k], test_iteration=[k],
                                            device_type=device)
            assert (comp[["control_total_duration", "test_total_duration"]] % 1 == 0).all().all()  # whole µs
            cats = {}
            for lt in (control, test):
                summary = lt.get_ops_summary(lt.extract_ops(None, [k], device))
                for cat, name in zip(summary["cat"], summary["name"]):
                    cats.setdefault(name, set()).add(cat)
            entry[device.name] = [
                {"name": name, "categories": sorted(cats[name]),
                 "control_counts": int(r["control_counts"]), "test_counts": int(r["test_counts"]),
                 "control_total_duration": int(r["control_total_duration"]),
                 "test_total_duration": int(r["test_total_duration"]),
                 "diff_counts": int(r["diff_counts"]), "diff_duration": int(r["diff_duration"]),
                 "counts_change_categories": r["counts_change_categories"]}
                for name, r in comp.iterrows()]
        out["iterations"][str(k)] = entry
    dst = os.path.join(PAIR, "hta_trace_diff.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", dst, "iterations", iterations)


if __name__ == "__main__":
    sys.exit(main())
