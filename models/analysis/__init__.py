"""Analyses over the generic results: trace statistics (kernels, ops, overview), baseline/candidate
diffs and the two sides of a comparison."""
