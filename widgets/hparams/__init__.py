"""The HParams tab: session groups table, filters, parallel coordinates, scatter matrix, curves."""
