"""The Compare tab: baseline against candidate tables, overlaid timelines and memory."""
