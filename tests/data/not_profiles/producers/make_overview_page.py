# XProf 2.24.2's OverviewPage message, filled as the overview_page tool fills it, serialised.
from xprof.protobuf import overview_page_pb2 as op
page = op.OverviewPage()
env = page.run_environment
env.host_count = 1
env.task_count = 1
env.device_type = "CPU"
env.device_core_count = 1
page.analysis.mxu_utilization_percent = 0.0
page.analysis.host_idle_time_percent = 12.5
page.analysis.device_idle_time_percent = 30.0
page.recommendation.bottleneck = "host"
page.recommendation.statement = "Your program is NOT input-bound"
page.input_analysis.step_time_summary.average = 10.0
open("vm.overview_page.pb", "wb").write(page.SerializeToString())
print([f.name for f, _ in page.ListFields()])
