"""XProf kernel_stats tool (registered below)."""
