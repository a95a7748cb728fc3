from profscope.protos import tensor_description_pb2 as _tensor_description_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryLogStep(_message.Message):
    __slots__ = ("step_id", "handle")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    handle: str
    def __init__(self, step_id: _Optional[int] = ..., handle: _Optional[str] = ...) -> None: ...

class MemoryLogTensorAllocation(_message.Message):
    __slots__ = ("step_id", "kernel_name", "tensor")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    KERNEL_NAME_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    kernel_name: str
    tensor: _tensor_description_pb2.TensorDescription
    def __init__(self, step_id: _Optional[int] = ..., kernel_name: _Optional[str] = ..., tensor: _Optional[_Union[_tensor_description_pb2.TensorDescription, _Mapping]] = ...) -> None: ...

class MemoryLogTensorDeallocation(_message.Message):
    __slots__ = ("allocation_id", "allocator_name")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_NAME_FIELD_NUMBER: _ClassVar[int]
    allocation_id: int
    allocator_name: str
    def __init__(self, allocation_id: _Optional[int] = ..., allocator_name: _Optional[str] = ...) -> None: ...

class MemoryLogTensorOutput(_message.Message):
    __slots__ = ("step_id", "kernel_name", "index", "tensor")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    KERNEL_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    kernel_name: str
    index: int
    tensor: _tensor_description_pb2.TensorDescription
    def __init__(self, step_id: _Optional[int] = ..., kernel_name: _Optional[str] = ..., index: _Optional[int] = ..., tensor: _Optional[_Union[_tensor_description_pb2.TensorDescription, _Mapping]] = ...) -> None: ...

class MemoryLogRawAllocation(_message.Message):
    __slots__ = ("step_id", "operation", "num_bytes", "ptr", "allocation_id", "allocator_name")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    NUM_BYTES_FIELD_NUMBER: _ClassVar[int]
    PTR_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_NAME_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    operation: str
    num_bytes: int
    ptr: int
    allocation_id: int
    allocator_name: str
    def __init__(self, step_id: _Optional[int] = ..., operation: _Optional[str] = ..., num_bytes: _Optional[int] = ..., ptr: _Optional[int] = ..., allocation_id: _Optional[int] = ..., allocator_name: _Optional[str] = ...) -> None: ...

class MemoryLogRawDeallocation(_message.Message):
    __slots__ = ("step_id", "operation", "allocation_id", "allocator_name", "deferred")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_NAME_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    operation: str
    allocation_id: int
    allocator_name: str
    deferred: bool
    def __init__(self, step_id: _Optional[int] = ..., operation: _Optional[str] = ..., allocation_id: _Optional[int] = ..., allocator_name: _Optional[str] = ..., deferred: _Optional[bool] = ...) -> None: ...
