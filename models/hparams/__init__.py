"""TensorBoard HParams: log dir scanning, the experiment and its session groups (api.proto's
ListSessionGroups), and the metrics' training curves."""
