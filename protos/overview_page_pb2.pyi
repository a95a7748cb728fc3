from google.protobuf import any_pb2 as _any_pb2
from profscope.protos import diagnostics_pb2 as _diagnostics_pb2
from profscope.protos import input_pipeline_pb2 as _input_pipeline_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OverviewTfOp(_message.Message):
    __slots__ = ("name", "category", "self_time_fraction", "cumulative_time_fraction", "flop_rate", "is_op_tensorcore_eligible", "is_op_using_tensorcore")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    SELF_TIME_FRACTION_FIELD_NUMBER: _ClassVar[int]
    CUMULATIVE_TIME_FRACTION_FIELD_NUMBER: _ClassVar[int]
    FLOP_RATE_FIELD_NUMBER: _ClassVar[int]
    IS_OP_TENSORCORE_ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    IS_OP_USING_TENSORCORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    category: str
    self_time_fraction: float
    cumulative_time_fraction: float
    flop_rate: float
    is_op_tensorcore_eligible: bool
    is_op_using_tensorcore: bool
    def __init__(self, name: _Optional[str] = ..., category: _Optional[str] = ..., self_time_fraction: _Optional[float] = ..., cumulative_time_fraction: _Optional[float] = ..., flop_rate: _Optional[float] = ..., is_op_tensorcore_eligible: _Optional[bool] = ..., is_op_using_tensorcore: _Optional[bool] = ...) -> None: ...

class OverviewPageAnalysis(_message.Message):
    __slots__ = ("mxu_utilization_percent", "device_idle_time_percent", "host_idle_time_percent", "top_device_ops", "remark_text", "remark_color", "flop_rate_utilization_relative_to_roofline_percent", "memory_bw_utilization_relative_to_hw_limit_percent", "device_compute_16bit_percent", "device_compute_32bit_percent", "host_tf_op_percent", "device_tf_op_percent", "host_trace_level", "host_op_time_eager_percent", "device_op_time_eager_percent", "device_op_time_outside_compilation_percent")
    MXU_UTILIZATION_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_IDLE_TIME_PERCENT_FIELD_NUMBER: _ClassVar[int]
    HOST_IDLE_TIME_PERCENT_FIELD_NUMBER: _ClassVar[int]
    TOP_DEVICE_OPS_FIELD_NUMBER: _ClassVar[int]
    REMARK_TEXT_FIELD_NUMBER: _ClassVar[int]
    REMARK_COLOR_FIELD_NUMBER: _ClassVar[int]
    FLOP_RATE_UTILIZATION_RELATIVE_TO_ROOFLINE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BW_UTILIZATION_RELATIVE_TO_HW_LIMIT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COMPUTE_16BIT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COMPUTE_32BIT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    HOST_TF_OP_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TF_OP_PERCENT_FIELD_NUMBER: _ClassVar[int]
    HOST_TRACE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    HOST_OP_TIME_EAGER_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_OP_TIME_EAGER_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_OP_TIME_OUTSIDE_COMPILATION_PERCENT_FIELD_NUMBER: _ClassVar[int]
    mxu_utilization_percent: float
    device_idle_time_percent: float
    host_idle_time_percent: float
    top_device_ops: _containers.RepeatedCompositeFieldContainer[OverviewTfOp]
    remark_text: str
    remark_color: str
    flop_rate_utilization_relative_to_roofline_percent: float
    memory_bw_utilization_relative_to_hw_limit_percent: float
    device_compute_16bit_percent: float
    device_compute_32bit_percent: float
    host_tf_op_percent: float
    device_tf_op_percent: float
    host_trace_level: int
    host_op_time_eager_percent: float
    device_op_time_eager_percent: float
    device_op_time_outside_compilation_percent: float
    def __init__(self, mxu_utilization_percent: _Optional[float] = ..., device_idle_time_percent: _Optional[float] = ..., host_idle_time_percent: _Optional[float] = ..., top_device_ops: _Optional[_Iterable[_Union[OverviewTfOp, _Mapping]]] = ..., remark_text: _Optional[str] = ..., remark_color: _Optional[str] = ..., flop_rate_utilization_relative_to_roofline_percent: _Optional[float] = ..., memory_bw_utilization_relative_to_hw_limit_percent: _Optional[float] = ..., device_compute_16bit_percent: _Optional[float] = ..., device_compute_32bit_percent: _Optional[float] = ..., host_tf_op_percent: _Optional[float] = ..., device_tf_op_percent: _Optional[float] = ..., host_trace_level: _Optional[int] = ..., host_op_time_eager_percent: _Optional[float] = ..., device_op_time_eager_percent: _Optional[float] = ..., device_op_time_outside_compilation_percent: _Optional[float] = ...) -> None: ...

class OverviewPageTip(_message.Message):
    __slots__ = ("link",)
    LINK_FIELD_NUMBER: _ClassVar[int]
    link: str
    def __init__(self, link: _Optional[str] = ...) -> None: ...

class GenericRecommendation(_message.Message):
    __slots__ = ("kernel_launch_bottleneck", "kernel_launch_statement", "all_other_bottleneck", "all_other_statement", "precision_statement", "device_collectives_bottleneck", "device_collectives_statement")
    KERNEL_LAUNCH_BOTTLENECK_FIELD_NUMBER: _ClassVar[int]
    KERNEL_LAUNCH_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    ALL_OTHER_BOTTLENECK_FIELD_NUMBER: _ClassVar[int]
    ALL_OTHER_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    PRECISION_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COLLECTIVES_BOTTLENECK_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COLLECTIVES_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    kernel_launch_bottleneck: str
    kernel_launch_statement: str
    all_other_bottleneck: str
    all_other_statement: str
    precision_statement: str
    device_collectives_bottleneck: str
    device_collectives_statement: str
    def __init__(self, kernel_launch_bottleneck: _Optional[str] = ..., kernel_launch_statement: _Optional[str] = ..., all_other_bottleneck: _Optional[str] = ..., all_other_statement: _Optional[str] = ..., precision_statement: _Optional[str] = ..., device_collectives_bottleneck: _Optional[str] = ..., device_collectives_statement: _Optional[str] = ...) -> None: ...

class OverviewPageRecommendation(_message.Message):
    __slots__ = ("bottleneck", "statement", "input_tips", "output_statement", "eager_statement_html", "outside_compilation_statement_html", "tf_function_statement_html", "host_tips", "device_tips", "documentation_tips", "recommendation", "faq_tips", "inference_tips")
    BOTTLENECK_FIELD_NUMBER: _ClassVar[int]
    STATEMENT_FIELD_NUMBER: _ClassVar[int]
    INPUT_TIPS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    EAGER_STATEMENT_HTML_FIELD_NUMBER: _ClassVar[int]
    OUTSIDE_COMPILATION_STATEMENT_HTML_FIELD_NUMBER: _ClassVar[int]
    TF_FUNCTION_STATEMENT_HTML_FIELD_NUMBER: _ClassVar[int]
    HOST_TIPS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TIPS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTATION_TIPS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    FAQ_TIPS_FIELD_NUMBER: _ClassVar[int]
    INFERENCE_TIPS_FIELD_NUMBER: _ClassVar[int]
    bottleneck: str
    statement: str
    input_tips: _containers.RepeatedCompositeFieldContainer[OverviewPageTip]
    output_statement: str
    eager_statement_html: str
    outside_compilation_statement_html: str
    tf_function_statement_html: str
    host_tips: _containers.RepeatedCompositeFieldContainer[OverviewPageTip]
    device_tips: _containers.RepeatedCompositeFieldContainer[OverviewPageTip]
    documentation_tips: _containers.RepeatedCompositeFieldContainer[OverviewPageTip]
    recommendation: _any_pb2.Any
    faq_tips: _containers.RepeatedCompositeFieldContainer[OverviewPageTip]
    inference_tips: _containers.RepeatedCompositeFieldContainer[OverviewPageTip]
    def __init__(self, bottleneck: _Optional[str] = ..., statement: _Optional[str] = ..., input_tips: _Optional[_Iterable[_Union[OverviewPageTip, _Mapping]]] = ..., output_statement: _Optional[str] = ..., eager_statement_html: _Optional[str] = ..., outside_compilation_statement_html: _Optional[str] = ..., tf_function_statement_html: _Optional[str] = ..., host_tips: _Optional[_Iterable[_Union[OverviewPageTip, _Mapping]]] = ..., device_tips: _Optional[_Iterable[_Union[OverviewPageTip, _Mapping]]] = ..., documentation_tips: _Optional[_Iterable[_Union[OverviewPageTip, _Mapping]]] = ..., recommendation: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., faq_tips: _Optional[_Iterable[_Union[OverviewPageTip, _Mapping]]] = ..., inference_tips: _Optional[_Iterable[_Union[OverviewPageTip, _Mapping]]] = ...) -> None: ...

class OverviewPageHostIndependentJobInfo(_message.Message):
    __slots__ = ("change_list", "build_time", "build_target", "profile_duration_ms")
    CHANGE_LIST_FIELD_NUMBER: _ClassVar[int]
    BUILD_TIME_FIELD_NUMBER: _ClassVar[int]
    BUILD_TARGET_FIELD_NUMBER: _ClassVar[int]
    PROFILE_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    change_list: int
    build_time: int
    build_target: str
    profile_duration_ms: int
    def __init__(self, change_list: _Optional[int] = ..., build_time: _Optional[int] = ..., build_target: _Optional[str] = ..., profile_duration_ms: _Optional[int] = ...) -> None: ...

class OverviewPageHostDependentJobInfo(_message.Message):
    __slots__ = ("host_id", "command_line", "start_time", "bns_address", "profile_time_ns")
    HOST_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    BNS_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    host_id: str
    command_line: str
    start_time: int
    bns_address: str
    profile_time_ns: int
    def __init__(self, host_id: _Optional[str] = ..., command_line: _Optional[str] = ..., start_time: _Optional[int] = ..., bns_address: _Optional[str] = ..., profile_time_ns: _Optional[int] = ...) -> None: ...

class OverviewPageRunEnvironment(_message.Message):
    __slots__ = ("host_count", "task_count", "hostnames", "device_type", "device_core_count", "per_core_batch_size", "host_independent_job_info", "host_dependent_job_info", "replica_count", "num_cores_per_replica")
    class HostnamesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bool
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bool] = ...) -> None: ...
    HOST_COUNT_FIELD_NUMBER: _ClassVar[int]
    TASK_COUNT_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CORE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PER_CORE_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    HOST_INDEPENDENT_JOB_INFO_FIELD_NUMBER: _ClassVar[int]
    HOST_DEPENDENT_JOB_INFO_FIELD_NUMBER: _ClassVar[int]
    REPLICA_COUNT_FIELD_NUMBER: _ClassVar[int]
    NUM_CORES_PER_REPLICA_FIELD_NUMBER: _ClassVar[int]
    host_count: int
    task_count: int
    hostnames: _containers.ScalarMap[str, bool]
    device_type: str
    device_core_count: int
    per_core_batch_size: int
    host_independent_job_info: OverviewPageHostIndependentJobInfo
    host_dependent_job_info: _containers.RepeatedCompositeFieldContainer[OverviewPageHostDependentJobInfo]
    replica_count: int
    num_cores_per_replica: int
    def __init__(self, host_count: _Optional[int] = ..., task_count: _Optional[int] = ..., hostnames: _Optional[_Mapping[str, bool]] = ..., device_type: _Optional[str] = ..., device_core_count: _Optional[int] = ..., per_core_batch_size: _Optional[int] = ..., host_independent_job_info: _Optional[_Union[OverviewPageHostIndependentJobInfo, _Mapping]] = ..., host_dependent_job_info: _Optional[_Iterable[_Union[OverviewPageHostDependentJobInfo, _Mapping]]] = ..., replica_count: _Optional[int] = ..., num_cores_per_replica: _Optional[int] = ...) -> None: ...

class OverviewPage(_message.Message):
    __slots__ = ("run_environment", "input_analysis", "analysis", "recommendation", "diagnostics")
    RUN_ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    INPUT_ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATION_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    run_environment: OverviewPageRunEnvironment
    input_analysis: _input_pipeline_pb2.InputPipelineAnalysisResult
    analysis: OverviewPageAnalysis
    recommendation: OverviewPageRecommendation
    diagnostics: _diagnostics_pb2.Diagnostics
    def __init__(self, run_environment: _Optional[_Union[OverviewPageRunEnvironment, _Mapping]] = ..., input_analysis: _Optional[_Union[_input_pipeline_pb2.InputPipelineAnalysisResult, _Mapping]] = ..., analysis: _Optional[_Union[OverviewPageAnalysis, _Mapping]] = ..., recommendation: _Optional[_Union[OverviewPageRecommendation, _Mapping]] = ..., diagnostics: _Optional[_Union[_diagnostics_pb2.Diagnostics, _Mapping]] = ...) -> None: ...
