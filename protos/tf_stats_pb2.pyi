from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TfStatsDatabase(_message.Message):
    __slots__ = ("with_idle", "without_idle", "device_type")
    WITH_IDLE_FIELD_NUMBER: _ClassVar[int]
    WITHOUT_IDLE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    with_idle: TfStatsTable
    without_idle: TfStatsTable
    device_type: str
    def __init__(self, with_idle: _Optional[_Union[TfStatsTable, _Mapping]] = ..., without_idle: _Optional[_Union[TfStatsTable, _Mapping]] = ..., device_type: _Optional[str] = ...) -> None: ...

class TfStatsTable(_message.Message):
    __slots__ = ("tf_stats_record", "host_tf_pprof_key", "device_tf_pprof_key")
    TF_STATS_RECORD_FIELD_NUMBER: _ClassVar[int]
    HOST_TF_PPROF_KEY_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TF_PPROF_KEY_FIELD_NUMBER: _ClassVar[int]
    tf_stats_record: _containers.RepeatedCompositeFieldContainer[TfStatsRecord]
    host_tf_pprof_key: str
    device_tf_pprof_key: str
    def __init__(self, tf_stats_record: _Optional[_Iterable[_Union[TfStatsRecord, _Mapping]]] = ..., host_tf_pprof_key: _Optional[str] = ..., device_tf_pprof_key: _Optional[str] = ...) -> None: ...

class TfStatsRecord(_message.Message):
    __slots__ = ("rank", "host_or_device", "op_type", "op_name", "occurrences", "total_time_in_us", "avg_time_in_us", "total_self_time_in_us", "avg_self_time_in_us", "device_total_self_time_as_fraction", "device_cumulative_total_self_time_as_fraction", "host_total_self_time_as_fraction", "host_cumulative_total_self_time_as_fraction", "measured_flop_rate", "measured_memory_bw", "operational_intensity", "bound_by", "is_eager", "gpu_tensorcore_utilization")
    RANK_FIELD_NUMBER: _ClassVar[int]
    HOST_OR_DEVICE_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    AVG_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SELF_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    AVG_SELF_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TOTAL_SELF_TIME_AS_FRACTION_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CUMULATIVE_TOTAL_SELF_TIME_AS_FRACTION_FIELD_NUMBER: _ClassVar[int]
    HOST_TOTAL_SELF_TIME_AS_FRACTION_FIELD_NUMBER: _ClassVar[int]
    HOST_CUMULATIVE_TOTAL_SELF_TIME_AS_FRACTION_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FLOP_RATE_FIELD_NUMBER: _ClassVar[int]
    MEASURED_MEMORY_BW_FIELD_NUMBER: _ClassVar[int]
    OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    BOUND_BY_FIELD_NUMBER: _ClassVar[int]
    IS_EAGER_FIELD_NUMBER: _ClassVar[int]
    GPU_TENSORCORE_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    rank: int
    host_or_device: str
    op_type: str
    op_name: str
    occurrences: int
    total_time_in_us: float
    avg_time_in_us: float
    total_self_time_in_us: float
    avg_self_time_in_us: float
    device_total_self_time_as_fraction: float
    device_cumulative_total_self_time_as_fraction: float
    host_total_self_time_as_fraction: float
    host_cumulative_total_self_time_as_fraction: float
    measured_flop_rate: float
    measured_memory_bw: float
    operational_intensity: float
    bound_by: str
    is_eager: bool
    gpu_tensorcore_utilization: float
    def __init__(self, rank: _Optional[int] = ..., host_or_device: _Optional[str] = ..., op_type: _Optional[str] = ..., op_name: _Optional[str] = ..., occurrences: _Optional[int] = ..., total_time_in_us: _Optional[float] = ..., avg_time_in_us: _Optional[float] = ..., total_self_time_in_us: _Optional[float] = ..., avg_self_time_in_us: _Optional[float] = ..., device_total_self_time_as_fraction: _Optional[float] = ..., device_cumulative_total_self_time_as_fraction: _Optional[float] = ..., host_total_self_time_as_fraction: _Optional[float] = ..., host_cumulative_total_self_time_as_fraction: _Optional[float] = ..., measured_flop_rate: _Optional[float] = ..., measured_memory_bw: _Optional[float] = ..., operational_intensity: _Optional[float] = ..., bound_by: _Optional[str] = ..., is_eager: _Optional[bool] = ..., gpu_tensorcore_utilization: _Optional[float] = ...) -> None: ...
