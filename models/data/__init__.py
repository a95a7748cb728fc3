"""The generic results every format fills: Timeline (events as columns), MemoryProfileData (memory over
time and allocations), ToolData (a tool's bytes)."""
