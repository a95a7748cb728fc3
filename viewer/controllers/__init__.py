"""What the main window does, one feature per class: each is built from the
runner, views and callbacks it needs, so it can be tested without a window."""
