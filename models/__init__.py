"""Readers and analyses of profile data: plain Python and numpy, no Qt.

Everything here runs in worker threads, in the command line and in tests
without a display.
"""
