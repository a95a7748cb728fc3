"""XProf op_profile tool (registered below)."""
