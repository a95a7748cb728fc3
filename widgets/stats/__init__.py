"""The Statistics tab: overview, kernel and operator statistics of a trace."""
