"""XProf hlo_stats tool (registered below)."""
