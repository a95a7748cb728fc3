"""The Statistics tab of xplane sessions: XProf's tools as pages (view.XprofStatsView)."""
