"""Package data: the application icon, and the bundled sample log dir (read with importlib.resources)."""
