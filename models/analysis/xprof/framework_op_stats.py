"""XProf framework_op_stats tool (registered below)."""
