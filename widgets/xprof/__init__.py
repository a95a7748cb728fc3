"""XProf's tools as pages of the Statistics tab for xplane sessions."""
