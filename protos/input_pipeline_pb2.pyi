from google.protobuf import any_pb2 as _any_pb2
from profscope.protos import diagnostics_pb2 as _diagnostics_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BottleneckAnalysis(_message.Message):
    __slots__ = ("input_percent", "output_percent", "idle_percent", "compute_percent", "input_classification", "input_statement", "kernel_launch_classification", "kernel_launch_statement", "all_other_classification", "all_other_statement", "device_collectives_classification", "device_collectives_statement")
    INPUT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    IDLE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    INPUT_CLASSIFICATION_FIELD_NUMBER: _ClassVar[int]
    INPUT_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    KERNEL_LAUNCH_CLASSIFICATION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_LAUNCH_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    ALL_OTHER_CLASSIFICATION_FIELD_NUMBER: _ClassVar[int]
    ALL_OTHER_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COLLECTIVES_CLASSIFICATION_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COLLECTIVES_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    input_percent: float
    output_percent: float
    idle_percent: float
    compute_percent: float
    input_classification: str
    input_statement: str
    kernel_launch_classification: str
    kernel_launch_statement: str
    all_other_classification: str
    all_other_statement: str
    device_collectives_classification: str
    device_collectives_statement: str
    def __init__(self, input_percent: _Optional[float] = ..., output_percent: _Optional[float] = ..., idle_percent: _Optional[float] = ..., compute_percent: _Optional[float] = ..., input_classification: _Optional[str] = ..., input_statement: _Optional[str] = ..., kernel_launch_classification: _Optional[str] = ..., kernel_launch_statement: _Optional[str] = ..., all_other_classification: _Optional[str] = ..., all_other_statement: _Optional[str] = ..., device_collectives_classification: _Optional[str] = ..., device_collectives_statement: _Optional[str] = ...) -> None: ...

class StepSummary(_message.Message):
    __slots__ = ("average", "standard_deviation", "minimum", "maximum")
    AVERAGE_FIELD_NUMBER: _ClassVar[int]
    STANDARD_DEVIATION_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    average: float
    standard_deviation: float
    minimum: float
    maximum: float
    def __init__(self, average: _Optional[float] = ..., standard_deviation: _Optional[float] = ..., minimum: _Optional[float] = ..., maximum: _Optional[float] = ...) -> None: ...

class PerGenericStepDetails(_message.Message):
    __slots__ = ("step_number", "step_time_ms", "unknown_time_ms", "host_wait_input_ms", "host_to_device_ms", "output_ms", "device_compute_ms", "device_to_device_ms", "device_collectives_ms", "host_compute_ms", "host_prepare_ms", "host_compile_ms")
    STEP_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_WAIT_INPUT_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_TO_DEVICE_MS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COMPUTE_MS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TO_DEVICE_MS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COLLECTIVES_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_COMPUTE_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_PREPARE_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_COMPILE_MS_FIELD_NUMBER: _ClassVar[int]
    step_number: int
    step_time_ms: float
    unknown_time_ms: float
    host_wait_input_ms: float
    host_to_device_ms: float
    output_ms: float
    device_compute_ms: float
    device_to_device_ms: float
    device_collectives_ms: float
    host_compute_ms: float
    host_prepare_ms: float
    host_compile_ms: float
    def __init__(self, step_number: _Optional[int] = ..., step_time_ms: _Optional[float] = ..., unknown_time_ms: _Optional[float] = ..., host_wait_input_ms: _Optional[float] = ..., host_to_device_ms: _Optional[float] = ..., output_ms: _Optional[float] = ..., device_compute_ms: _Optional[float] = ..., device_to_device_ms: _Optional[float] = ..., device_collectives_ms: _Optional[float] = ..., host_compute_ms: _Optional[float] = ..., host_prepare_ms: _Optional[float] = ..., host_compile_ms: _Optional[float] = ...) -> None: ...

class InputTimeBreakdown(_message.Message):
    __slots__ = ("demanded_file_read_us", "advanced_file_read_us", "preprocessing_us", "enqueue_us", "unclassified_non_enqueue_us")
    DEMANDED_FILE_READ_US_FIELD_NUMBER: _ClassVar[int]
    ADVANCED_FILE_READ_US_FIELD_NUMBER: _ClassVar[int]
    PREPROCESSING_US_FIELD_NUMBER: _ClassVar[int]
    ENQUEUE_US_FIELD_NUMBER: _ClassVar[int]
    UNCLASSIFIED_NON_ENQUEUE_US_FIELD_NUMBER: _ClassVar[int]
    demanded_file_read_us: float
    advanced_file_read_us: float
    preprocessing_us: float
    enqueue_us: float
    unclassified_non_enqueue_us: float
    def __init__(self, demanded_file_read_us: _Optional[float] = ..., advanced_file_read_us: _Optional[float] = ..., preprocessing_us: _Optional[float] = ..., enqueue_us: _Optional[float] = ..., unclassified_non_enqueue_us: _Optional[float] = ...) -> None: ...

class InputOpDetails(_message.Message):
    __slots__ = ("op_name", "count", "time_in_ms", "time_in_percent", "self_time_in_ms", "self_time_in_percent", "category")
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TIME_IN_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_IN_PERCENT_FIELD_NUMBER: _ClassVar[int]
    SELF_TIME_IN_MS_FIELD_NUMBER: _ClassVar[int]
    SELF_TIME_IN_PERCENT_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    op_name: str
    count: int
    time_in_ms: float
    time_in_percent: float
    self_time_in_ms: float
    self_time_in_percent: float
    category: str
    def __init__(self, op_name: _Optional[str] = ..., count: _Optional[int] = ..., time_in_ms: _Optional[float] = ..., time_in_percent: _Optional[float] = ..., self_time_in_ms: _Optional[float] = ..., self_time_in_percent: _Optional[float] = ..., category: _Optional[str] = ...) -> None: ...

class InputPipelineAnalysisRecommendation(_message.Message):
    __slots__ = ("details", "bottleneck_analysis", "summary_next_step")
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    BOTTLENECK_ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_NEXT_STEP_FIELD_NUMBER: _ClassVar[int]
    details: _containers.RepeatedScalarFieldContainer[str]
    bottleneck_analysis: _any_pb2.Any
    summary_next_step: str
    def __init__(self, details: _Optional[_Iterable[str]] = ..., bottleneck_analysis: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., summary_next_step: _Optional[str] = ...) -> None: ...

class GenericStepTimeBreakdown(_message.Message):
    __slots__ = ("unknown_time_ms_summary", "host_wait_input_ms_summary", "host_to_device_ms_summary", "input_ms_summary", "output_ms_summary", "device_compute_ms_summary", "device_to_device_ms_summary", "device_collectives_ms_summary", "host_compute_ms_summary", "host_prepare_ms_summary", "host_compile_ms_summary")
    UNKNOWN_TIME_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    HOST_WAIT_INPUT_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    HOST_TO_DEVICE_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    INPUT_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COMPUTE_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TO_DEVICE_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COLLECTIVES_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    HOST_COMPUTE_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    HOST_PREPARE_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    HOST_COMPILE_MS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    unknown_time_ms_summary: StepSummary
    host_wait_input_ms_summary: StepSummary
    host_to_device_ms_summary: StepSummary
    input_ms_summary: StepSummary
    output_ms_summary: StepSummary
    device_compute_ms_summary: StepSummary
    device_to_device_ms_summary: StepSummary
    device_collectives_ms_summary: StepSummary
    host_compute_ms_summary: StepSummary
    host_prepare_ms_summary: StepSummary
    host_compile_ms_summary: StepSummary
    def __init__(self, unknown_time_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., host_wait_input_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., host_to_device_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., input_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., output_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., device_compute_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., device_to_device_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., device_collectives_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., host_compute_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., host_prepare_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., host_compile_ms_summary: _Optional[_Union[StepSummary, _Mapping]] = ...) -> None: ...

class InputPipelineAnalysisResult(_message.Message):
    __slots__ = ("hardware_type", "step_time_summary", "input_percent_summary", "input_percent", "output_percent", "idle_percent", "compute_percent", "step_details", "input_time_breakdown", "input_op_details", "recommendation", "step_time_breakdown", "diagnostics")
    HARDWARE_TYPE_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    INPUT_PERCENT_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    INPUT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    IDLE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    STEP_DETAILS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TIME_BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    INPUT_OP_DETAILS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    STEP_TIME_BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    hardware_type: str
    step_time_summary: StepSummary
    input_percent_summary: StepSummary
    input_percent: float
    output_percent: float
    idle_percent: float
    compute_percent: float
    step_details: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    input_time_breakdown: InputTimeBreakdown
    input_op_details: _containers.RepeatedCompositeFieldContainer[InputOpDetails]
    recommendation: InputPipelineAnalysisRecommendation
    step_time_breakdown: _any_pb2.Any
    diagnostics: _diagnostics_pb2.Diagnostics
    def __init__(self, hardware_type: _Optional[str] = ..., step_time_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., input_percent_summary: _Optional[_Union[StepSummary, _Mapping]] = ..., input_percent: _Optional[float] = ..., output_percent: _Optional[float] = ..., idle_percent: _Optional[float] = ..., compute_percent: _Optional[float] = ..., step_details: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ..., input_time_breakdown: _Optional[_Union[InputTimeBreakdown, _Mapping]] = ..., input_op_details: _Optional[_Iterable[_Union[InputOpDetails, _Mapping]]] = ..., recommendation: _Optional[_Union[InputPipelineAnalysisRecommendation, _Mapping]] = ..., step_time_breakdown: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., diagnostics: _Optional[_Union[_diagnostics_pb2.Diagnostics, _Mapping]] = ...) -> None: ...
