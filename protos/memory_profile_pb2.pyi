from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryActivity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN_ACTIVITY: _ClassVar[MemoryActivity]
    ALLOCATION: _ClassVar[MemoryActivity]
    DEALLOCATION: _ClassVar[MemoryActivity]
    RESERVATION: _ClassVar[MemoryActivity]
    EXPANSION: _ClassVar[MemoryActivity]
UNKNOWN_ACTIVITY: MemoryActivity
ALLOCATION: MemoryActivity
DEALLOCATION: MemoryActivity
RESERVATION: MemoryActivity
EXPANSION: MemoryActivity

class MemoryAggregationStats(_message.Message):
    __slots__ = ("stack_reserved_bytes", "heap_allocated_bytes", "free_memory_bytes", "fragmentation", "peak_bytes_in_use")
    STACK_RESERVED_BYTES_FIELD_NUMBER: _ClassVar[int]
    HEAP_ALLOCATED_BYTES_FIELD_NUMBER: _ClassVar[int]
    FREE_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    FRAGMENTATION_FIELD_NUMBER: _ClassVar[int]
    PEAK_BYTES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    stack_reserved_bytes: int
    heap_allocated_bytes: int
    free_memory_bytes: int
    fragmentation: float
    peak_bytes_in_use: int
    def __init__(self, stack_reserved_bytes: _Optional[int] = ..., heap_allocated_bytes: _Optional[int] = ..., free_memory_bytes: _Optional[int] = ..., fragmentation: _Optional[float] = ..., peak_bytes_in_use: _Optional[int] = ...) -> None: ...

class MemoryActivityMetadata(_message.Message):
    __slots__ = ("memory_activity", "requested_bytes", "allocation_bytes", "address", "tf_op_name", "step_id", "region_type", "data_type", "tensor_shape")
    MEMORY_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BYTES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_BYTES_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TF_OP_NAME_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    REGION_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    memory_activity: MemoryActivity
    requested_bytes: int
    allocation_bytes: int
    address: int
    tf_op_name: str
    step_id: int
    region_type: str
    data_type: str
    tensor_shape: str
    def __init__(self, memory_activity: _Optional[_Union[MemoryActivity, str]] = ..., requested_bytes: _Optional[int] = ..., allocation_bytes: _Optional[int] = ..., address: _Optional[int] = ..., tf_op_name: _Optional[str] = ..., step_id: _Optional[int] = ..., region_type: _Optional[str] = ..., data_type: _Optional[str] = ..., tensor_shape: _Optional[str] = ...) -> None: ...

class MemoryProfileSnapshot(_message.Message):
    __slots__ = ("time_offset_ps", "aggregation_stats", "activity_metadata")
    TIME_OFFSET_PS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_STATS_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_METADATA_FIELD_NUMBER: _ClassVar[int]
    time_offset_ps: int
    aggregation_stats: MemoryAggregationStats
    activity_metadata: MemoryActivityMetadata
    def __init__(self, time_offset_ps: _Optional[int] = ..., aggregation_stats: _Optional[_Union[MemoryAggregationStats, _Mapping]] = ..., activity_metadata: _Optional[_Union[MemoryActivityMetadata, _Mapping]] = ...) -> None: ...

class MemoryProfileSummary(_message.Message):
    __slots__ = ("peak_bytes_usage_lifetime", "peak_stats", "peak_stats_time_ps", "memory_capacity")
    PEAK_BYTES_USAGE_LIFETIME_FIELD_NUMBER: _ClassVar[int]
    PEAK_STATS_FIELD_NUMBER: _ClassVar[int]
    PEAK_STATS_TIME_PS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    peak_bytes_usage_lifetime: int
    peak_stats: MemoryAggregationStats
    peak_stats_time_ps: int
    memory_capacity: int
    def __init__(self, peak_bytes_usage_lifetime: _Optional[int] = ..., peak_stats: _Optional[_Union[MemoryAggregationStats, _Mapping]] = ..., peak_stats_time_ps: _Optional[int] = ..., memory_capacity: _Optional[int] = ...) -> None: ...

class ActiveAllocation(_message.Message):
    __slots__ = ("snapshot_index", "special_index", "num_occurrences")
    SNAPSHOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SPECIAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    NUM_OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    snapshot_index: int
    special_index: int
    num_occurrences: int
    def __init__(self, snapshot_index: _Optional[int] = ..., special_index: _Optional[int] = ..., num_occurrences: _Optional[int] = ...) -> None: ...

class PerAllocatorMemoryProfile(_message.Message):
    __slots__ = ("memory_profile_snapshots", "profile_summary", "active_allocations", "special_allocations", "sampled_timeline_snapshots")
    MEMORY_PROFILE_SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    SPECIAL_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    SAMPLED_TIMELINE_SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    memory_profile_snapshots: _containers.RepeatedCompositeFieldContainer[MemoryProfileSnapshot]
    profile_summary: MemoryProfileSummary
    active_allocations: _containers.RepeatedCompositeFieldContainer[ActiveAllocation]
    special_allocations: _containers.RepeatedCompositeFieldContainer[MemoryActivityMetadata]
    sampled_timeline_snapshots: _containers.RepeatedCompositeFieldContainer[MemoryProfileSnapshot]
    def __init__(self, memory_profile_snapshots: _Optional[_Iterable[_Union[MemoryProfileSnapshot, _Mapping]]] = ..., profile_summary: _Optional[_Union[MemoryProfileSummary, _Mapping]] = ..., active_allocations: _Optional[_Iterable[_Union[ActiveAllocation, _Mapping]]] = ..., special_allocations: _Optional[_Iterable[_Union[MemoryActivityMetadata, _Mapping]]] = ..., sampled_timeline_snapshots: _Optional[_Iterable[_Union[MemoryProfileSnapshot, _Mapping]]] = ...) -> None: ...

class HloModule(_message.Message):
    __slots__ = ("name", "start_time_ps", "end_time_ps", "id", "plane_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_PS_FIELD_NUMBER: _ClassVar[int]
    END_TIME_PS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PLANE_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    start_time_ps: int
    end_time_ps: int
    id: int
    plane_name: str
    def __init__(self, name: _Optional[str] = ..., start_time_ps: _Optional[int] = ..., end_time_ps: _Optional[int] = ..., id: _Optional[int] = ..., plane_name: _Optional[str] = ...) -> None: ...

class MemoryProfile(_message.Message):
    __slots__ = ("memory_profile_per_allocator", "num_hosts", "memory_ids", "version", "hlo_modules")
    class MemoryProfilePerAllocatorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PerAllocatorMemoryProfile
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PerAllocatorMemoryProfile, _Mapping]] = ...) -> None: ...
    MEMORY_PROFILE_PER_ALLOCATOR_FIELD_NUMBER: _ClassVar[int]
    NUM_HOSTS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    HLO_MODULES_FIELD_NUMBER: _ClassVar[int]
    memory_profile_per_allocator: _containers.MessageMap[str, PerAllocatorMemoryProfile]
    num_hosts: int
    memory_ids: _containers.RepeatedScalarFieldContainer[str]
    version: int
    hlo_modules: _containers.RepeatedCompositeFieldContainer[HloModule]
    def __init__(self, memory_profile_per_allocator: _Optional[_Mapping[str, PerAllocatorMemoryProfile]] = ..., num_hosts: _Optional[int] = ..., memory_ids: _Optional[_Iterable[str]] = ..., version: _Optional[int] = ..., hlo_modules: _Optional[_Iterable[_Union[HloModule, _Mapping]]] = ...) -> None: ...
