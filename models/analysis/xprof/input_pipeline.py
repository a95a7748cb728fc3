"""XProf input_pipeline tool (registered below)."""
