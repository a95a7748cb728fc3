"""The Memory tab: memory over time per allocator, the summary card, the allocation and kernel tables."""
