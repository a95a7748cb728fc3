from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class KernelReport(_message.Message):
    __slots__ = ("name", "registers_per_thread", "static_shmem_bytes", "dynamic_shmem_bytes", "block_dim", "grid_dim", "total_duration_ns", "min_duration_ns", "max_duration_ns", "is_kernel_using_tensor_core", "is_op_tensor_core_eligible", "op_name", "occurrences")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REGISTERS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    STATIC_SHMEM_BYTES_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SHMEM_BYTES_FIELD_NUMBER: _ClassVar[int]
    BLOCK_DIM_FIELD_NUMBER: _ClassVar[int]
    GRID_DIM_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    MIN_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    MAX_DURATION_NS_FIELD_NUMBER: _ClassVar[int]
    IS_KERNEL_USING_TENSOR_CORE_FIELD_NUMBER: _ClassVar[int]
    IS_OP_TENSOR_CORE_ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    name: str
    registers_per_thread: int
    static_shmem_bytes: int
    dynamic_shmem_bytes: int
    block_dim: _containers.RepeatedScalarFieldContainer[int]
    grid_dim: _containers.RepeatedScalarFieldContainer[int]
    total_duration_ns: int
    min_duration_ns: int
    max_duration_ns: int
    is_kernel_using_tensor_core: bool
    is_op_tensor_core_eligible: bool
    op_name: str
    occurrences: int
    def __init__(self, name: _Optional[str] = ..., registers_per_thread: _Optional[int] = ..., static_shmem_bytes: _Optional[int] = ..., dynamic_shmem_bytes: _Optional[int] = ..., block_dim: _Optional[_Iterable[int]] = ..., grid_dim: _Optional[_Iterable[int]] = ..., total_duration_ns: _Optional[int] = ..., min_duration_ns: _Optional[int] = ..., max_duration_ns: _Optional[int] = ..., is_kernel_using_tensor_core: _Optional[bool] = ..., is_op_tensor_core_eligible: _Optional[bool] = ..., op_name: _Optional[str] = ..., occurrences: _Optional[int] = ...) -> None: ...

class KernelStatsDb(_message.Message):
    __slots__ = ("reports",)
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    reports: _containers.RepeatedCompositeFieldContainer[KernelReport]
    def __init__(self, reports: _Optional[_Iterable[_Union[KernelReport, _Mapping]]] = ...) -> None: ...
