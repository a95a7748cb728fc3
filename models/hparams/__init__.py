"""TensorBoard HParams: log dir scanning, the experiment and its session groups (api.proto's
ListSessionGroups), and the metrics' training curves."""

# The HParams tools (`profscope export PATH --tool T`), here so that naming them loads no reader.
TOOLS = ("hparams_experiment", "hparams_session_groups", "hparams_metric_evals")
