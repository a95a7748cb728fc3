"""The schemas: generated code is current, field numbers are the real ones,
and models/ and protos/ never pull in Qt."""

import importlib
import pkgutil
import subprocess
import sys

import pytest
from conftest import ROOT

GENERATED = sorted((ROOT / "protos").glob("*_pb2.py*"))


def test_regenerated_code_equals_committed(tmp_path):
    sys.path.insert(0, str(ROOT / "protos"))
    try:
        from generate import generate
    finally:
        sys.path.pop(0)
    fresh = generate(tmp_path)
    assert [p.name for p in fresh] == [p.name for p in GENERATED]
    for new, old in zip(fresh, GENERATED):
        assert new.read_bytes() == old.read_bytes(), f"{old.name} is stale: run python protos/generate.py"


def fields(descriptor):
    """Field names, numbers, types and labels, recursively, with our package prefix removed."""
    out = {}
    for f in descriptor.fields:
        type_name = (f.message_type or f.enum_type).full_name if (f.message_type or f.enum_type) else f.type
        if isinstance(type_name, str):
            type_name = type_name.removeprefix("profscope.")
        out[f.name] = (f.number, type_name, f.is_repeated, f.containing_oneof.name if f.containing_oneof else None)
    for nested in descriptor.nested_types:
        out[nested.name] = fields(nested)
    return out


# Our modules against TensorBoard's copies of the TensorFlow and HParams schemas.
PAIRS = [
    ("profscope.protos.types_pb2", "tensorboard.compat.proto.types_pb2"),
    ("profscope.protos.tensor_shape_pb2", "tensorboard.compat.proto.tensor_shape_pb2"),
    ("profscope.protos.allocation_description_pb2", "tensorboard.compat.proto.allocation_description_pb2"),
    ("profscope.protos.tensor_description_pb2", "tensorboard.compat.proto.tensor_description_pb2"),
    ("profscope.protos.step_stats_pb2", "tensorboard.compat.proto.step_stats_pb2"),
    ("profscope.protos.api_pb2", "tensorboard.plugins.hparams.api_pb2"),
    ("profscope.protos.plugin_data_pb2", "tensorboard.plugins.hparams.plugin_data_pb2"),
]


@pytest.mark.parametrize("ours,theirs", PAIRS)
def test_schema_matches_the_real_one(ours, theirs):
    mine = importlib.import_module(ours).DESCRIPTOR
    real = importlib.import_module(theirs).DESCRIPTOR
    # TensorBoard's compat copies sit in package "tensorboard"; ours drop "profscope.".
    strip = lambda d: {k: _rename(v, real.package) for k, v in d.items()}
    assert sorted(mine.message_types_by_name) == sorted(real.message_types_by_name)
    for name, message in real.message_types_by_name.items():
        assert strip(fields(mine.message_types_by_name[name])) == strip(fields(message)), name
    for name, enum in real.enum_types_by_name.items():
        assert [(v.name, v.number) for v in mine.enum_types_by_name[name].values] == [
            (v.name, v.number) for v in enum.values
        ]


def test_run_metadata_fields_are_the_real_ones():
    """config.proto holds only the RunMetadata parts Profscope reads."""
    from tensorboard.compat.proto import config_pb2 as real

    from profscope.protos import config_pb2

    for name in ("RunMetadata", "SessionMetadata"):
        mine = fields(getattr(config_pb2, name).DESCRIPTOR)
        theirs = fields(getattr(real, name).DESCRIPTOR)
        assert {k: _rename(v, "") for k, v in mine.items()} == {k: _rename(theirs[k], "") for k in mine}


@pytest.mark.parametrize(
    "module,names",
    [
        ("tensor", ["TensorProto"]),
        ("summary", ["Summary", "Summary.Value", "SummaryMetadata", "SummaryMetadata.PluginData"]),
        ("event", ["Event"]),
    ],
)
def test_event_file_fields_are_the_real_ones(module, names):
    """tensor.proto and summary.proto hold only the parts Profscope reads."""
    mine_module = importlib.import_module(
        "profscope.protos.summary_pb2" if module == "event" else f"profscope.protos.{module}_pb2"
    )
    real_module = importlib.import_module(f"tensorboard.compat.proto.{module}_pb2")
    for name in names:
        mine, real = mine_module, real_module
        for part in name.split("."):
            mine, real = getattr(mine, part), getattr(real, part)
        ours = {k: v for k, v in fields(mine.DESCRIPTOR).items() if not isinstance(v, dict)}
        theirs = {k: v for k, v in fields(real.DESCRIPTOR).items() if not isinstance(v, dict)}
        assert {k: _rename(v, "") for k, v in ours.items()} == {k: _rename(theirs[k], "") for k in ours}, name
    assert [
        (v.name, v.number) for v in importlib.import_module("profscope.protos.summary_pb2").DataClass.DESCRIPTOR.values
    ] == [
        (v.name, v.number)
        for v in importlib.import_module("tensorboard.compat.proto.summary_pb2").DataClass.DESCRIPTOR.values
    ]


def _rename(value, package):
    if isinstance(value, dict):
        return {k: _rename(v, package) for k, v in value.items()}
    number, type_name, repeated, oneof = value
    if isinstance(type_name, str):
        type_name = type_name.split(".")[-1]
    return number, type_name, repeated, oneof


def test_models_and_protos_never_import_qt():
    from profscope import models

    modules = [f"profscope.protos.{p.stem}" for p in GENERATED if p.suffix == ".py"]
    modules += [m.name for m in pkgutil.walk_packages(models.__path__, "profscope.models.")]
    code = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "bad = [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'superqt'))]\nassert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
