"""XProf overview_page tool (registered below)."""
