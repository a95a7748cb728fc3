from profscope.protos import profiler_service_pb2 as _profiler_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NewProfileSessionRequest(_message.Message):
    __slots__ = ("request", "repository_root", "hosts", "session_id")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    request: _profiler_service_pb2.ProfileRequest
    repository_root: str
    hosts: _containers.RepeatedScalarFieldContainer[str]
    session_id: str
    def __init__(self, request: _Optional[_Union[_profiler_service_pb2.ProfileRequest, _Mapping]] = ..., repository_root: _Optional[str] = ..., hosts: _Optional[_Iterable[str]] = ..., session_id: _Optional[str] = ...) -> None: ...

class NewProfileSessionResponse(_message.Message):
    __slots__ = ("error_message", "empty_trace")
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EMPTY_TRACE_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    empty_trace: bool
    def __init__(self, error_message: _Optional[str] = ..., empty_trace: _Optional[bool] = ...) -> None: ...

class EnumProfileSessionsAndToolsRequest(_message.Message):
    __slots__ = ("repository_root",)
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    repository_root: str
    def __init__(self, repository_root: _Optional[str] = ...) -> None: ...

class ProfileSessionInfo(_message.Message):
    __slots__ = ("session_id", "available_tools")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    available_tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_id: _Optional[str] = ..., available_tools: _Optional[_Iterable[str]] = ...) -> None: ...

class EnumProfileSessionsAndToolsResponse(_message.Message):
    __slots__ = ("error_message", "sessions")
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    sessions: _containers.RepeatedCompositeFieldContainer[ProfileSessionInfo]
    def __init__(self, error_message: _Optional[str] = ..., sessions: _Optional[_Iterable[_Union[ProfileSessionInfo, _Mapping]]] = ...) -> None: ...

class ProfileSessionDataRequest(_message.Message):
    __slots__ = ("repository_root", "session_id", "host_name", "tool_name", "parameters")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    repository_root: str
    session_id: str
    host_name: str
    tool_name: str
    parameters: _containers.ScalarMap[str, str]
    def __init__(self, repository_root: _Optional[str] = ..., session_id: _Optional[str] = ..., host_name: _Optional[str] = ..., tool_name: _Optional[str] = ..., parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ProfileSessionDataResponse(_message.Message):
    __slots__ = ("error_message", "output_format", "output")
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FORMAT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    output_format: str
    output: bytes
    def __init__(self, error_message: _Optional[str] = ..., output_format: _Optional[str] = ..., output: _Optional[bytes] = ...) -> None: ...
