"""The Query tab: SQL editor, result table and chart."""
