"""The Timeline tab: the canvas of lanes, its view with search and details, op statistics of a range."""
