"""XProf roofline tool (registered below)."""
