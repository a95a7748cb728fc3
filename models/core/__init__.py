"""Plumbing every reader shares: cancellable tasks and their errors, units, guarded file reading and
inflating, TFRecord event files."""
